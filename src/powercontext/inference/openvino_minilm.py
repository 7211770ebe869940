"""The MiniLM transformer blocks as an OpenVINO model: the fastest route of the local provider on CPUs with bf16.

The model is built here, in memory, with OpenVINO's own operation set from the float32 tensors ``BertEncoder``
holds (the shipped int8 weights dequantised at load): no file, no conversion step, nothing downloaded.
Attention is OpenVINO's fused ``ScaledDotProductAttention``; GELU is the exact (erf) one, as BERT defines it.

Why OpenVINO: on a CPU with bfloat16 dot-product instructions (AVX512-BF16, AMX; OpenVINO reports ``BF16``)
its CPU plugin runs the matmuls in bfloat16 with float32 accumulation, about twice the float32 rate. The
rounding this adds is small beside the shipped weights' int8 quantisation: the fidelity test holds this route to
the same bound as the others (cosine >= 0.999 to the float32 original model). Where the CPU lacks bf16 the model
runs in float32, like the ONNX Runtime route. The word-embedding lookup and its layer norm stay in NumPy, in
float32 (a few rows of the int8 table).

Needs the ``embeddings-fast`` extra (``openvino``); ``powercontext.inference.local`` picks another route when it
is missing.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import numpy.typing as npt

from powercontext.inference.bert import F32, LAYER_NORM_EPS, BertEncoder, CompiledBlocks


def available() -> bool:
    """Whether OpenVINO imports."""
    try:
        import openvino  # noqa: F401
    except ImportError:
        return False
    return True


def build_model(encoder: BertEncoder) -> Any:
    """An ``openvino.Model``: (hidden after the embedding norm, bool mask) -> summed last hidden states.

    Inputs ``hidden`` ``(batch, length, hidden)`` float32 and ``mask`` ``(batch, length)`` boolean (true for a
    token, false for padding); output ``(batch, hidden)``: the sum over unmasked tokens, not yet divided.
    """
    import openvino as ov
    import openvino.opset13 as ops

    width = encoder.hidden_size
    heads = encoder.heads
    hidden = ops.parameter([-1, -1, width], np.float32, name="hidden")
    mask = ops.parameter([-1, -1], np.bool_, name="mask")
    key_mask = ops.unsqueeze(mask, np.array([1, 2], dtype=np.int64))  # (batch, 1, 1, length): per key
    split_heads = np.array([0, 0, heads, width // heads], dtype=np.int64)
    merge_heads = np.array([0, 0, width], dtype=np.int64)
    to_heads = np.array([0, 2, 1, 3], dtype=np.int64)

    def dense(x: Any, weight: F32, bias: F32) -> Any:
        return ops.add(ops.matmul(x, ops.constant(weight), False, False), ops.constant(bias))

    def norm(x: Any, gain: F32, bias: F32) -> Any:
        normed = ops.mvn(x, np.array([-1], dtype=np.int64), True, LAYER_NORM_EPS, "inside_sqrt")
        return ops.add(ops.multiply(normed, ops.constant(gain)), ops.constant(bias))

    def per_head(x: Any) -> Any:
        return ops.transpose(ops.reshape(x, split_heads, special_zero=True), to_heads)

    x: Any = hidden
    for layer in encoder.layers:
        q, k, v = ops.split(dense(x, layer.qkv_w, layer.qkv_b), -1, 3).outputs()
        context = ops.scaled_dot_product_attention(per_head(q), per_head(k), per_head(v), key_mask)
        merged = ops.reshape(ops.transpose(context, to_heads), merge_heads, special_zero=True)
        x = norm(ops.add(dense(merged, layer.attn_out_w, layer.attn_out_b), x), layer.attn_norm_g, layer.attn_norm_b)
        inner = ops.gelu(dense(x, layer.ff_in_w, layer.ff_in_b), "erf")
        x = norm(ops.add(dense(inner, layer.ff_out_w, layer.ff_out_b), x), layer.ff_norm_g, layer.ff_norm_b)
    # Mean pooling's numerator: (batch, 1, length) @ (batch, length, hidden).
    weights = ops.unsqueeze(ops.convert(mask, np.float32), np.array([1], dtype=np.int64))
    summed = ops.squeeze(ops.matmul(weights, x, False, False), np.array([1], dtype=np.int64))
    return ov.Model([summed], [hidden, mask], "minilm-blocks")


def precision(core: Any) -> str:
    """``bf16`` where the CPU plugin reports bfloat16 support, else ``f32``."""
    capabilities = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    return "bf16" if "BF16" in capabilities else "f32"


# Padded input shapes. The CPU plugin keeps compiled kernels for every input shape it has run (1-2 MB each,
# freed only with the compiled model: 55 query lengths held ~100 MB). Padding each mini-batch up to one of these
# lengths and batch sizes bounds the shapes a long-lived Server collects (the token budget keeps long texts in
# small batches, so far fewer than 16 x 10 occur: an ingest of 2,000 bench memories ran 14). Padding is masked
# out, so a text's vector does not change; below 64 tokens a text gains at most 7 padded positions, above it at
# most a quarter of its length, and a mini-batch at most a third of its rows. Measured on the bench queries, one
# query also runs faster padded (2.3 against 3.1 ms): the kernels of its few shapes are built once.
PADDED_LENGTHS = (8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256)
PADDED_BATCHES = (1, 2, 4, 8, 12, 16, 24, 32, 48, 64)


def padded_size(size: int, steps: tuple[int, ...]) -> int:
    """The smallest step that holds ``size``; ``size`` itself past the last step."""
    for step in steps:
        if step >= size:
            return step
    return size


def pad_inputs(hidden: F32, mask: npt.NDArray[np.bool_]) -> tuple[F32, npt.NDArray[np.bool_]]:
    """``hidden`` and ``mask`` grown to a padded shape: new positions masked out, new rows one unmasked zero
    position each (so no row is all padding; their sums are dropped)."""
    batch, length, width = hidden.shape
    rows, positions = padded_size(batch, PADDED_BATCHES), padded_size(length, PADDED_LENGTHS)
    if (rows, positions) == (batch, length):
        return hidden, mask
    padded = np.zeros((rows, positions, width), dtype=np.float32)
    padded[:batch, :length] = hidden
    padded_mask = np.zeros((rows, positions), dtype=np.bool_)
    padded_mask[:batch, :length] = mask
    padded_mask[batch:, 0] = True
    return padded, padded_mask


class OpenVinoMiniLM(CompiledBlocks):
    """``BertEncoder.mean_pooled`` with the six blocks compiled once by OpenVINO's CPU plugin.

    One compiled model, one stream of ``threads`` threads, serves queries and mini-batches alike; a call waits
    for the one infer request, so mini-batches are not run side by side (``parallel_batches`` is false: the
    stream already uses every thread). It replaces two copies (one single-thread stream per core for
    mini-batches, one two-thread stream for queries), each holding its own weights, kernels and activation
    buffers. Measured in one process on the shared 2-core machine, after 2,000 bench memories and 180 queries:
    256 MB against 468 MB (with mini-batches of 1,024 instead of 4,096 tokens), 217-231 against 244 memories/s,
    one query 2.1-3.0 against 3.1 ms. Inputs are padded to ``PADDED_LENGTHS`` x ``PADDED_BATCHES``.
    """

    parallel_batches = False

    def __init__(self, encoder: BertEncoder, *, threads: int) -> None:
        import openvino as ov

        core = ov.Core()
        self.precision = precision(core)
        config = {
            "INFERENCE_PRECISION_HINT": self.precision,
            "INFERENCE_NUM_THREADS": threads,
            "NUM_STREAMS": 1,
            "PERFORMANCE_HINT": "LATENCY",
        }
        self._compiled = core.compile_model(build_model(encoder), "CPU", config)
        self._request = self._compiled.create_infer_request()
        self._lock = threading.Lock()
        super().__init__(encoder)

    def _summed(self, hidden: F32, mask: npt.NDArray[np.bool_]) -> F32:
        batch = hidden.shape[0]
        padded, padded_mask = pad_inputs(hidden, mask)
        with self._lock:
            result = self._request.infer({"hidden": padded, "mask": padded_mask})
            # The output buffer belongs to the request: copy it before the request serves another call.
            return np.array(result[0][:batch], dtype=np.float32)
