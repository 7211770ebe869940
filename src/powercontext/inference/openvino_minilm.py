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

import queue
from collections.abc import Iterator
from contextlib import contextmanager
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


class _Compiled:
    """One compiled model and a pool of its infer requests (a request serves one call at a time)."""

    def __init__(self, core: Any, model: Any, config: dict[str, Any]) -> None:
        self._compiled = core.compile_model(model, "CPU", config)
        self._requests: queue.SimpleQueue[Any] = queue.SimpleQueue()

    @contextmanager
    def request(self) -> Iterator[Any]:
        try:
            request = self._requests.get_nowait()
        except queue.Empty:
            request = self._compiled.create_infer_request()
        try:
            yield request
        finally:
            self._requests.put(request)


class OpenVinoMiniLM(CompiledBlocks):
    """``BertEncoder.mean_pooled`` with the six blocks compiled by OpenVINO's CPU plugin, twice.

    Mini-batches of several texts run on a model with ``threads`` streams of one thread each: a call runs on one
    thread, and throughput comes from callers running mini-batches side by side (as with the other routes),
    which does not stall when another process holds a core. One text (a query) runs on a model with one stream
    of ``threads`` threads, the lower latency for a small input. Measured on an idle 2-core machine: streams
    ~600-670 sentences/s against ~550-600 for one two-thread stream; one query 2.8-3.1 ms on two threads
    against 3.8-4.3 ms on one. The second compiled copy costs about 30 MB of RSS (measured: +223 MB against +192).
    """

    def __init__(self, encoder: BertEncoder, *, threads: int) -> None:
        import openvino as ov

        core = ov.Core()
        self.precision = precision(core)
        model = build_model(encoder)
        common = {"INFERENCE_PRECISION_HINT": self.precision, "INFERENCE_NUM_THREADS": threads}
        self._bulk = _Compiled(core, model, {**common, "NUM_STREAMS": threads})
        self._single = _Compiled(core, model, {**common, "NUM_STREAMS": 1, "PERFORMANCE_HINT": "LATENCY"})
        super().__init__(encoder)

    def _summed(self, hidden: F32, mask: npt.NDArray[np.bool_]) -> F32:
        with (self._single if hidden.shape[0] == 1 else self._bulk).request() as request:
            result = request.infer({"hidden": hidden, "mask": mask})
            # The output buffer belongs to the request: copy it before the request serves another call.
            return np.array(result[0], dtype=np.float32)
