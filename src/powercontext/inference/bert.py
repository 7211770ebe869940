"""A pure-NumPy forward pass of a BERT encoder with mean pooling: enough of BERT to run all-MiniLM-L6-v2.

Only inference is supported, with one segment (token type 0) and right padding. Dense weights are float32 so BLAS
does the matmuls; the word-embedding table may stay int8 because a lookup only ever touches a few rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from powercontext.inference.quant import Int8Matrix

F32 = npt.NDArray[np.float32]
Tensors = Callable[[str], F32]  # a float32 tensor by its HuggingFace BertModel name

LAYER_NORM_EPS = 1e-12
# Large enough that exp() of a masked score is exactly 0, small enough to stay finite in float32 arithmetic.
_MASKED = np.float32(-1e9)

# Abramowitz & Stegun 7.1.26: |error| <= 1.5e-7 in erf, below float32 resolution of the GELU inputs that matter.
# Coefficients pre-scaled for an argument of |x| rather than |x|/sqrt 2, and for tail/2 rather than tail.
_ERF_P_SCALED = np.float32(0.3275911 / math.sqrt(2.0))
_HALF_ERF_A = tuple(np.float32(a / 2) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))
_FFN_ROWS = 256


@dataclass(frozen=True)
class EncoderLayer:
    """One transformer block. Matrices are stored input-major (``x @ w``), query/key/value fused into one."""

    qkv_w: F32  # (hidden, 3 * hidden)
    qkv_b: F32
    attn_out_w: F32  # (hidden, hidden)
    attn_out_b: F32
    attn_norm_g: F32
    attn_norm_b: F32
    ff_in_w: F32  # (hidden, intermediate)
    ff_in_b: F32
    ff_out_w: F32  # (intermediate, hidden)
    ff_out_b: F32
    ff_norm_g: F32
    ff_norm_b: F32


@dataclass(frozen=True)
class BertEncoder:
    words: F32 | Int8Matrix  # (vocab, hidden)
    positions: F32  # (max_positions, hidden)
    token_type0: F32  # (hidden,): the only segment a sentence embedding uses
    embed_norm_g: F32
    embed_norm_b: F32
    layers: tuple[EncoderLayer, ...]
    heads: int

    @property
    def hidden_size(self) -> int:
        return int(self.embed_norm_g.shape[0])

    @property
    def max_positions(self) -> int:
        return int(self.positions.shape[0])

    @classmethod
    def from_tensors(cls, tensor: Tensors, words: F32 | Int8Matrix, *, layers: int, heads: int) -> BertEncoder:
        """Assemble from HuggingFace ``BertModel`` tensor names (``embeddings.*``, ``encoder.layer.N.*``)."""

        def t(name: str) -> F32:
            return np.ascontiguousarray(tensor(name), dtype=np.float32)

        def linear(name: str) -> F32:  # torch stores (out, in); x @ w wants (in, out)
            return np.ascontiguousarray(t(name).T)

        blocks = []
        for i in range(layers):
            p = f"encoder.layer.{i}."
            attn = p + "attention.self."
            blocks.append(
                EncoderLayer(
                    qkv_w=np.ascontiguousarray(
                        np.concatenate([linear(attn + f"{k}.weight") for k in ("query", "key", "value")], axis=1)
                    ),
                    qkv_b=np.concatenate([t(attn + f"{k}.bias") for k in ("query", "key", "value")]),
                    attn_out_w=linear(p + "attention.output.dense.weight"),
                    attn_out_b=t(p + "attention.output.dense.bias"),
                    attn_norm_g=t(p + "attention.output.LayerNorm.weight"),
                    attn_norm_b=t(p + "attention.output.LayerNorm.bias"),
                    ff_in_w=linear(p + "intermediate.dense.weight"),
                    ff_in_b=t(p + "intermediate.dense.bias"),
                    ff_out_w=linear(p + "output.dense.weight"),
                    ff_out_b=t(p + "output.dense.bias"),
                    ff_norm_g=t(p + "output.LayerNorm.weight"),
                    ff_norm_b=t(p + "output.LayerNorm.bias"),
                )
            )
        return cls(
            words=words,
            positions=t("embeddings.position_embeddings.weight"),
            token_type0=t("embeddings.token_type_embeddings.weight")[0].copy(),
            embed_norm_g=t("embeddings.LayerNorm.weight"),
            embed_norm_b=t("embeddings.LayerNorm.bias"),
            layers=tuple(blocks),
            heads=heads,
        )

    def mean_pooled(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_]) -> F32:
        """Mean of the last hidden states over the unmasked tokens, shape ``(batch, hidden)``; not normalised.

        ``ids`` and ``mask`` are ``(batch, length)`` with padding on the right; every row needs one real token.
        """
        batch, length = ids.shape
        x = self.token_inputs(ids)
        key_bias = np.where(mask, np.float32(0.0), _MASKED).astype(np.float32)[:, None, None, :]
        for layer in self.layers:
            x = self._block(layer, x, key_bias, batch, length)
        weights = mask.astype(np.float32).reshape(batch, length, 1)
        summed: F32 = (x.reshape(batch, length, -1) * weights).sum(axis=1)
        summed /= weights.sum(axis=1)
        return summed

    def token_inputs(self, ids: npt.NDArray[np.int64]) -> F32:
        """The first block's input: word, position and segment embeddings, layer-normed, ``(batch * length, d)``."""
        batch, length = ids.shape
        x = self.words.rows(ids) if isinstance(self.words, Int8Matrix) else self.words[ids]
        x += self.positions[:length]
        x += self.token_type0
        return _layer_norm(x.reshape(batch * length, -1), self.embed_norm_g, self.embed_norm_b)

    def _block(self, layer: EncoderLayer, x: F32, key_bias: F32, batch: int, length: int) -> F32:
        hidden = x.shape[1]
        head_dim = hidden // self.heads
        qkv = self._linear(x, layer.qkv_w, layer.qkv_b)
        # (batch*length, 3*hidden) -> three (batch, heads, length, head_dim) views
        q, k, v = qkv.reshape(batch, length, 3, self.heads, head_dim).transpose(2, 0, 3, 1, 4)
        scores = q @ k.transpose(0, 1, 3, 2)
        scores *= np.float32(1.0 / math.sqrt(head_dim))
        scores += key_bias
        _softmax_in_place(scores)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, hidden)
        attended = self._linear(context, layer.attn_out_w, layer.attn_out_b)
        attended += x
        x = _layer_norm(attended, layer.attn_norm_g, layer.attn_norm_b)
        out = np.empty_like(x)
        # Row blocks keep the 4x-wide intermediate activations in cache between the two matmuls and GELU's
        # many elementwise passes; that halves the time of this, the most expensive, part of a block.
        for start in range(0, x.shape[0], _FFN_ROWS):
            rows = slice(start, start + _FFN_ROWS)
            inner = self._linear(x[rows], layer.ff_in_w, layer.ff_in_b)
            _gelu_in_place(inner)
            out[rows] = self._linear(inner, layer.ff_out_w, layer.ff_out_b)
        out += x
        return _layer_norm(out, layer.ff_norm_g, layer.ff_norm_b)

    def _linear(self, x: F32, weight: F32, bias: F32) -> F32:
        """``x @ weight + bias``; the one place every dense layer's input passes (a calibration tool taps it)."""
        out = x @ weight
        out += bias
        return out


def _layer_norm(x: F32, gain: F32, bias: F32) -> F32:
    centred: F32 = x - x.mean(axis=-1, keepdims=True)
    var = np.mean(np.square(centred), axis=-1, keepdims=True)
    centred *= 1.0 / np.sqrt(var + np.float32(LAYER_NORM_EPS))
    centred *= gain
    centred += bias
    return centred


def _softmax_in_place(scores: F32) -> None:
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)


def _gelu_in_place(x: F32) -> None:
    """Exact (erf) GELU, ``x * Phi(x)``, as BERT defines it; not the tanh approximation.

    With ``tail = 1 - erf(|x| / sqrt 2)``, GELU is ``max(x, 0) - |x| * tail / 2`` for either sign of ``x``.
    """
    ax = np.abs(x)
    t = ax * _ERF_P_SCALED
    t += 1.0
    np.reciprocal(t, out=t)
    poly = t * _HALF_ERF_A[0]
    for a in _HALF_ERF_A[1:]:
        poly += a
        poly *= t
    gauss = np.square(x)
    gauss *= np.float32(-0.5)
    np.exp(gauss, out=gauss)
    poly *= gauss  # now tail / 2
    poly *= ax
    np.maximum(x, 0.0, out=x)
    x -= poly


class CompiledBlocks:
    """``BertEncoder.mean_pooled`` with the transformer blocks in a compiled runtime (ONNX Runtime, OpenVINO)
    and the embedding lookup still in NumPy. A subclass builds its runtime from the full encoder, then calls
    ``__init__`` here, and gives ``_summed``."""

    def __init__(self, encoder: BertEncoder) -> None:
        # The runtime holds its own copy of the blocks' weights: keep only the embedding tables (~45 MB less).
        self.encoder = replace(encoder, layers=())
        self._hidden = encoder.hidden_size

    @property
    def hidden_size(self) -> int:
        return self._hidden

    def mean_pooled(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_]) -> F32:
        """Same contract as ``BertEncoder.mean_pooled``."""
        batch, length = ids.shape
        out = self._summed(self.encoder.token_inputs(ids).reshape(batch, length, -1), mask)
        out /= mask.sum(axis=1, keepdims=True).astype(np.float32)
        return out

    def _summed(self, hidden: F32, mask: npt.NDArray[np.bool_]) -> F32:
        """The last hidden states summed over each text's tokens, ``(batch, hidden)``, a new array."""
        raise NotImplementedError
