"""The MiniLM transformer blocks as an ONNX graph, run by ONNX Runtime: the fast route of the local provider.

The graph is authored here, in memory, with the ``onnx`` package from the float32 tensors ``BertEncoder``
already holds (the shipped int8 weights dequantised at load): no torch, no file written, nothing downloaded.
It uses ONNX Runtime's fused CPU kernels (``Attention``, ``SkipLayerNormalization``, ``BiasGelu``, all of the
``com.microsoft`` domain) so one block is six kernels instead of about thirty. Arithmetic stays float32: the
vectors equal the NumPy forward pass's to within float rounding (cosine 0.9999999), so both routes share one
``model_id``. The word-embedding lookup and its layer norm stay in NumPy (a few rows of the int8 table).

Needs the ``embeddings-fast`` extra (``onnx`` and ``onnxruntime``); ``powercontext.inference.local`` falls back
to the NumPy forward pass when either is missing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from powercontext.inference.bert import F32, LAYER_NORM_EPS, BertEncoder, CompiledBlocks, EncoderLayer

_MS = "com.microsoft"


def available() -> bool:
    """Whether both packages of the fast route import."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


class _Graph:
    """The nodes and initializers of a graph under construction, in the order they are added."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self._helper = helper
        self._numpy_helper = numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    def const(self, name: str, value: npt.NDArray[Any]) -> str:
        self.initializers.append(self._numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, kind: str, inputs: list[str], out: str, domain: str = "", **attrs: Any) -> str:
        self.nodes.append(self._helper.make_node(kind, inputs, [out], name=out, domain=domain, **attrs))
        return out


def _add_layer(g: _Graph, i: int, layer: EncoderLayer, x: str, heads: int) -> str:
    """One encoder block (fused attention, then the feed-forward), each followed by a skip layer norm."""
    p = f"l{i}."
    context = g.op(
        "Attention",
        [x, g.const(p + "qkv_w", layer.qkv_w), g.const(p + "qkv_b", layer.qkv_b), "mask"],
        p + "context",
        domain=_MS,
        num_heads=heads,
    )
    attended = g.op("MatMul", [context, g.const(p + "ao_w", layer.attn_out_w)], p + "ao")
    x = _skip_norm(g, p + "an", attended, x, layer.attn_norm_g, layer.attn_norm_b, (p + "ao_b", layer.attn_out_b))
    inner = g.op("MatMul", [x, g.const(p + "fi_w", layer.ff_in_w)], p + "fi")
    gelu = g.op("BiasGelu", [inner, g.const(p + "fi_b", layer.ff_in_b)], p + "gelu", domain=_MS)
    out = g.op("MatMul", [gelu, g.const(p + "fo_w", layer.ff_out_w)], p + "fo")
    return _skip_norm(g, p + "fn", out, x, layer.ff_norm_g, layer.ff_norm_b, (p + "fo_b", layer.ff_out_b))


def _skip_norm(g: _Graph, name: str, value: str, skip: str, gain: F32, shift: F32, bias: tuple[str, F32]) -> str:
    """``LayerNorm(value + bias + skip)`` in one fused kernel; ``bias`` is the preceding MatMul's, added here."""
    norm = [g.const(name + "_g", gain), g.const(name + "_b", shift), g.const(*bias)]
    return g.op("SkipLayerNormalization", [value, skip, *norm], name, domain=_MS, epsilon=LAYER_NORM_EPS)


def build_graph(encoder: BertEncoder) -> bytes:
    """A serialised ONNX model: (hidden after the embedding norm, int32 mask) -> summed last hidden states.

    Inputs ``hidden`` ``(batch, length, hidden)`` float32 and ``mask`` ``(batch, length)`` int32 (1 for a token,
    0 for padding); output ``pooled_sum`` ``(batch, hidden)``: the sum over unmasked tokens, not yet divided.
    """
    from onnx import TensorProto, helper

    hidden = encoder.hidden_size
    g = _Graph()
    x = "hidden"
    for i, layer in enumerate(encoder.layers):
        x = _add_layer(g, i, layer, x, encoder.heads)
    # Mean pooling's numerator in the graph: (batch, 1, length) @ (batch, length, hidden).
    weights = g.op(
        "Unsqueeze",
        [g.op("Cast", ["mask"], "mask_f", to=TensorProto.FLOAT), g.const("axis1", np.array([1]))],
        "mask_row",
    )
    summed = g.op("MatMul", [weights, x], "summed3")
    g.op("Squeeze", [summed, "axis1"], "pooled_sum")
    f32 = TensorProto.FLOAT
    model = helper.make_model(
        helper.make_graph(
            g.nodes,
            "minilm-blocks",
            [
                helper.make_tensor_value_info("hidden", f32, ["batch", "length", hidden]),
                helper.make_tensor_value_info("mask", TensorProto.INT32, ["batch", "length"]),
            ],
            [helper.make_tensor_value_info("pooled_sum", f32, ["batch", hidden])],
            g.initializers,
        ),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(_MS, 1)],
    )
    model.ir_version = 8
    return bytes(model.SerializeToString())


class OnnxMiniLM(CompiledBlocks):
    """``BertEncoder.mean_pooled`` with the six blocks in one ONNX Runtime session.

    The session runs each call on the calling thread only (one intra-op thread, no spinning): concurrency
    comes from the caller running mini-batches on several threads, which ``session.run`` allows (it releases
    the GIL). A spinning or multi-threaded intra-op pool would stall whenever one of its threads is descheduled
    on a busy machine, and would compete with the Server's request threads.
    """

    def __init__(self, encoder: BertEncoder) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # warnings about unused initialisers etc. are not the user's business
        # The CPU arena keeps every activation buffer it ever grew for the next call (~135 MB after mini-batches
        # of varied shapes, measured); without it buffers go back to the heap, which the provider trims after
        # bulk calls. One query measured no slower (6.0 against 7.3 ms at 18 tokens).
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False
        self._session = ort.InferenceSession(build_graph(encoder), options, providers=["CPUExecutionProvider"])
        super().__init__(encoder)

    def _summed(self, hidden: F32, mask: npt.NDArray[np.bool_]) -> F32:
        (summed,) = self._session.run(["pooled_sum"], {"hidden": hidden, "mask": mask.astype(np.int32)})
        return np.asarray(summed, dtype=np.float32)
