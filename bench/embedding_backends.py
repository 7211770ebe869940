"""The local MiniLM's pure-NumPy forward pass against an ONNX Runtime graph of the same weights, in one process.

    .venv/bin/pip install onnx onnxruntime     # not dependencies of the package: this is an experiment
    OPENBLAS_NUM_THREADS=1 .venv/bin/python bench/embedding_backends.py [--sentences 400] [--words 15] [--int8]

The six transformer blocks are authored as an ONNX graph from the float32 tensors ``BertEncoder`` holds (no
torch, nothing downloaded); the embedding lookup and its layer norm stay in NumPy for both backends. Prints,
per backend and interleaved twice, batch throughput and single-query latency in wall time and in CPU time
(CPU time stays meaningful on a busy machine), and the cosine of each backend's vectors to the NumPy ones on
the 201 fidelity sentences of ``tools/convert_minilm.py``. ``--int8`` adds ONNX Runtime's dynamic int8
quantization of the same graph (per-channel weights). Figures of the last run: docs/evaluation.md.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from _common import make_corpus

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))

from convert_minilm import fidelity_sentences

from powercontext.inference.bert import _MASKED, LAYER_NORM_EPS, BertEncoder, EncoderLayer, _layer_norm
from powercontext.inference.local import embed_texts, load_encoder, load_tokenizer
from powercontext.inference.quant import Int8Matrix


def graph(encoder: BertEncoder) -> bytes:
    """(hidden after the embedding norm, key bias, token weights) -> summed last hidden states."""
    from onnx import TensorProto, helper, numpy_helper

    hidden = int(encoder.embed_norm_g.shape[0])
    heads, nodes, inits = encoder.heads, [], []
    head_dim = hidden // heads

    def const(name: str, value: Any) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(kind: str, inputs: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(kind, inputs, [out], name=out, **attrs))
        return out

    def dense(x: str, w: Any, b: Any, name: str) -> str:
        return op("Add", [op("MatMul", [x, const(name + ".w", w)], name + ".mm"), const(name + ".b", b)], name)

    sizes = const("sizes", np.array([hidden] * 3, dtype=np.int64))
    split = const("split", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge = const("merge", np.array([0, 0, hidden], dtype=np.int64))
    scale = const("scale", np.array(1.0 / math.sqrt(head_dim), dtype=np.float32))
    inv_sqrt2 = const("inv_sqrt2", np.array(1.0 / math.sqrt(2.0), dtype=np.float32))
    one, half = const("one", np.array(1.0, np.float32)), const("half", np.array(0.5, np.float32))
    x = "hidden"
    for i, layer in enumerate(encoder.layers):
        p, w = f"l{i}.", {n: getattr(layer, n) for n in EncoderLayer.__dataclass_fields__}
        qkv = dense(x, w["qkv_w"], w["qkv_b"], p + "qkv")
        nodes.append(helper.make_node("Split", [qkv, sizes], [p + "q2", p + "k2", p + "v2"], axis=-1))
        q = op("Transpose", [op("Reshape", [p + "q2", split], p + "q4")], p + "q", perm=[0, 2, 1, 3])
        k = op("Transpose", [op("Reshape", [p + "k2", split], p + "k4")], p + "k", perm=[0, 2, 3, 1])
        v = op("Transpose", [op("Reshape", [p + "v2", split], p + "v4")], p + "v", perm=[0, 2, 1, 3])
        scores = op("Add", [op("Mul", [op("MatMul", [q, k], p + "qk"), scale], p + "s"), "key_bias"], p + "sb")
        ctx = op("MatMul", [op("Softmax", [scores], p + "pr", axis=-1), v], p + "c4")
        ctx = op("Reshape", [op("Transpose", [ctx], p + "ct", perm=[0, 2, 1, 3]), merge], p + "c")
        att = op("Add", [dense(ctx, w["attn_out_w"], w["attn_out_b"], p + "ao"), x], p + "ar")
        x = op("LayerNormalization", [att, const(p + "ag", w["attn_norm_g"]), const(p + "ab", w["attn_norm_b"])],
               p + "an", axis=-1, epsilon=LAYER_NORM_EPS)
        inner = dense(x, w["ff_in_w"], w["ff_in_b"], p + "fi")
        erf = op("Erf", [op("Mul", [inner, inv_sqrt2], p + "gs")], p + "ge")
        gelu = op("Mul", [op("Mul", [inner, op("Add", [erf, one], p + "g1")], p + "gx"), half], p + "gelu")
        out = op("Add", [dense(gelu, w["ff_out_w"], w["ff_out_b"], p + "fo"), x], p + "fr")
        x = op("LayerNormalization", [out, const(p + "fg", w["ff_norm_g"]), const(p + "fb", w["ff_norm_b"])],
               p + "fn", axis=-1, epsilon=LAYER_NORM_EPS)
    op("ReduceSum", [op("Mul", [x, "token_weights"], "weighted"), const("axis1", np.array([1], np.int64))],
       "pooled_sum", keepdims=0)
    f32 = TensorProto.FLOAT
    model = helper.make_model(
        helper.make_graph(
            nodes,
            "minilm",
            [
                helper.make_tensor_value_info("hidden", f32, ["batch", "length", hidden]),
                helper.make_tensor_value_info("key_bias", f32, ["batch", 1, 1, "length"]),
                helper.make_tensor_value_info("token_weights", f32, ["batch", "length", 1]),
            ],
            [helper.make_tensor_value_info("pooled_sum", f32, ["batch", hidden])],
            inits,
        ),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    model.ir_version = 8
    return bytes(model.SerializeToString())


class OnnxEncoder:
    """``BertEncoder.mean_pooled`` with the blocks in ONNX Runtime, one intra-op thread, no spinning."""

    def __init__(self, encoder: BertEncoder, model: bytes | str) -> None:
        import onnxruntime as ort

        self.encoder, self.embed_norm_g, self.hidden_size = encoder, encoder.embed_norm_g, encoder.hidden_size
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

    def mean_pooled(self, ids: Any, mask: Any) -> Any:
        enc = self.encoder
        batch, length = ids.shape
        x = enc.words.rows(ids) if isinstance(enc.words, Int8Matrix) else enc.words[ids]
        x += enc.positions[:length]
        x += enc.token_type0
        x = _layer_norm(x.reshape(batch * length, -1), enc.embed_norm_g, enc.embed_norm_b).reshape(batch, length, -1)
        bias = np.where(mask, np.float32(0.0), _MASKED).astype(np.float32)[:, None, None, :]
        weights = mask.astype(np.float32).reshape(batch, length, 1)
        (summed,) = self.session.run(None, {"hidden": x, "key_bias": bias, "token_weights": weights})
        return summed / weights.sum(axis=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=400)
    parser.add_argument("--words", type=int, default=15)
    parser.add_argument("--int8", action="store_true")
    args = parser.parse_args()
    encoder, tokenizer = load_encoder(), load_tokenizer()
    t0 = time.perf_counter()
    model = graph(encoder)
    backends: dict[str, Any] = {"numpy": encoder, "onnx-f32": OnnxEncoder(encoder, model)}
    print(f"graph authored and session built in {time.perf_counter() - t0:.2f} s")
    tmp = tempfile.TemporaryDirectory()
    if args.int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        source, target = Path(tmp.name) / "f32.onnx", Path(tmp.name) / "int8.onnx"
        source.write_bytes(model)
        quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8, per_channel=True)
        backends["onnx-int8"] = OnnxEncoder(encoder, str(target))
    sentences = fidelity_sentences()
    reference = embed_texts(encoder, tokenizer, sentences)
    for name, backend in backends.items():
        cosines = np.sum(reference * embed_texts(backend, tokenizer, sentences), axis=1)
        print(f"{name:<10} cosine to numpy on {len(sentences)} sentences: min {cosines.min():.7f}")
    texts = [" ".join(item["text"].split()[: args.words]) for item in make_corpus(args.sentences, seed=99)]
    query = ["why did we shard the session tokens"]
    for _ in range(2):
        for name, backend in backends.items():
            embed_texts(backend, tokenizer, texts[:64])
            c0, t0 = time.process_time(), time.perf_counter()
            embed_texts(backend, tokenizer, texts)
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            walls, cpus = [], []
            for _ in range(50):
                c1, t1 = time.process_time(), time.perf_counter()
                embed_texts(backend, tokenizer, query)
                walls.append(time.perf_counter() - t1)
                cpus.append(time.process_time() - c1)
            print(
                f"{name:<10} batch {len(texts) / wall:6.0f} sentences/s ({len(texts) / cpu:6.0f} per CPU-s);"
                f" one query p50 {np.median(walls) * 1000:6.2f} ms ({np.median(cpus) * 1000:5.2f} ms CPU)"
            )
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
