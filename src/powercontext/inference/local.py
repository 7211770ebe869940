"""The offline local provider: all-MiniLM-L6-v2 (384 dimensions) from int8 weights shipped in this package.

Needs the ``embeddings`` extra (numpy and HuggingFace ``tokenizers``); never touches a network or a model hub.

The matmuls run in numpy's BLAS. A server whose concurrency comes from worker threads is better served by
``OPENBLAS_NUM_THREADS=1`` (set before numpy is imported, so by the operator or the launcher, not here): on a
shared machine a multi-threaded BLAS stalls small matmuls whenever one of its threads is descheduled.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

import numpy as np
from tokenizers import Tokenizer

from powercontext.inference.base import Vectors, l2_normalise
from powercontext.inference.bert import F32, BertEncoder
from powercontext.inference.errors import InferenceError, InferenceUnavailable
from powercontext.inference.quant import Int8Matrix

MODEL_NAME = "all-MiniLM-L6-v2"
CONVERSION = "int8-v1"  # part of model_id: a new conversion must not be compared with vectors of the old one
WEIGHTS_FORMAT = "powercontext-minilm-int8-v1"
DIMENSION = 384
LAYERS = 6
HEADS = 12
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model; longer inputs are truncated
# Attention scores cost batch * heads * length^2 floats: bounding batch * length keeps a mini-batch of long
# texts near 50 MB while short texts still batch widely.
TOKEN_BUDGET = 4096

_DATA = "minilm"


def load_tokenizer() -> Tokenizer:
    """The model's WordPiece tokenizer, truncating to ``MAX_TOKENS`` (special tokens included), unpadded."""
    text = resources.files(__package__).joinpath(_DATA).joinpath("tokenizer.json").read_text(encoding="utf-8")
    tokenizer = Tokenizer.from_str(text)
    # The shipped file pads and truncates to 128; padding is done per mini-batch here instead.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    return tokenizer


def load_encoder() -> BertEncoder:
    """Dequantise the packaged weights to float32, except the word table, which stays int8 (lookups only)."""
    with resources.files(__package__).joinpath(_DATA).joinpath("weights.npz").open("rb") as fh, np.load(fh) as npz:
        if str(npz["format"]) != WEIGHTS_FORMAT:
            raise ValueError("the packaged weights have an unexpected format")
        arrays = {name: npz[name] for name in npz.files}

    def matrix(name: str) -> Int8Matrix:
        return Int8Matrix(arrays[name + ".q"], arrays[name + ".scale"], arrays[name + ".col"])

    def tensor(name: str) -> F32:
        if name in arrays:
            return np.asarray(arrays[name], dtype=np.float32)
        return matrix(name).dequantise()

    return BertEncoder.from_tensors(tensor, matrix("embeddings.word_embeddings.weight"), layers=LAYERS, heads=HEADS)


def embed_texts(
    encoder: BertEncoder,
    tokenizer: Tokenizer,
    texts: Sequence[str],
    *,
    batch_size: int = 64,
    token_budget: int = TOKEN_BUDGET,
) -> Vectors:
    """Embed with any encoder/tokenizer pair: texts are sorted by length and padded per mini-batch only."""
    hidden = int(encoder.embed_norm_g.shape[0])
    if not texts:
        return np.zeros((0, hidden), dtype=np.float32)
    # One encode per text, not encode_batch: its thread pool would compete with BLAS for the same cores.
    encoded = [tokenizer.encode(text).ids for text in texts]
    lengths = np.array([len(ids) for ids in encoded])
    order = np.argsort(lengths, kind="stable")
    out = np.empty((len(texts), hidden), dtype=np.float32)
    start = 0
    while start < len(order):
        # Lengths ascend, so the last text of a mini-batch sets its padded length.
        end = start + 1
        while end < len(order) and end - start < batch_size and (end - start + 1) * lengths[order[end]] <= token_budget:
            end += 1
        members = order[start:end]
        width = int(lengths[members[-1]])
        ids = np.zeros((len(members), width), dtype=np.int64)
        mask = np.zeros((len(members), width), dtype=np.bool_)
        for row, index in enumerate(members):
            ids[row, : lengths[index]] = encoded[index]
            mask[row, : lengths[index]] = True
        out[members] = encoder.mean_pooled(ids, mask)
        start = end
    return l2_normalise(out)


@dataclass(frozen=True)
class _Model:
    encoder: BertEncoder
    tokenizer: Tokenizer


class LocalMiniLM:
    """all-MiniLM-L6-v2 in pure NumPy: mean pooling over the attention mask, then L2 normalisation.

    The weights load on first use (or on ``load()``, to move that cost to start-up), once, under a lock;
    afterwards ``embed`` is safe to call from many threads at once: the model is read-only.
    """

    name = "local"
    model_id = f"local:{MODEL_NAME}:{CONVERSION}"
    dimension = DIMENSION
    configured = True

    def __init__(self, batch_size: int = 64) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.batch_size = batch_size
        self._lock = threading.Lock()
        self._model: _Model | None = None

    def load(self) -> None:
        """Load the weights now rather than on the first ``embed``. Raises ``InferenceUnavailable``."""
        self._loaded()

    def embed(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):  # a bare string is a Sequence[str] of characters: almost surely a mistake
            raise TypeError("embed takes a sequence of texts, not one string")
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        model = self._loaded()
        try:
            return embed_texts(model.encoder, model.tokenizer, texts, batch_size=self.batch_size)
        except InferenceError:
            raise
        except Exception as exc:  # e.g. MemoryError, or a non-str item the tokenizer rejects
            raise InferenceUnavailable(f"the local embedding model failed ({type(exc).__name__})") from None

    def call_budget_s(self, count: int) -> float | None:
        return None  # computation on this machine: nothing to wait for but the CPU

    def close(self) -> None:
        """Drop the weights (about 60 MB); a later ``embed`` loads them again."""
        with self._lock:
            self._model = None

    def _loaded(self) -> _Model:
        model = self._model
        if model is not None:
            return model
        with self._lock:
            if self._model is None:
                try:
                    self._model = _Model(load_encoder(), load_tokenizer())
                except Exception as exc:  # a broken install: missing or damaged package data
                    raise InferenceUnavailable(
                        f"the local embedding model could not be loaded ({type(exc).__name__})"
                    ) from None
            return self._model
