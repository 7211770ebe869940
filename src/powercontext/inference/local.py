"""The offline local provider: all-MiniLM-L6-v2 (384 dimensions) from int8 weights shipped in this package.

Needs the ``embeddings`` extra (numpy and HuggingFace ``tokenizers``); never touches a network or a model hub.
Faster routes for the transformer blocks, chosen by ``backend="auto"`` in this order when installed:
OpenVINO (``powercontext.inference.openvino_minilm``, the ``embeddings-fast`` extra), which runs them in bfloat16
where the CPU supports it (about twice the float32 rate); ONNX Runtime in float32
(``powercontext.inference.onnx_minilm``, ``onnx`` and ``onnxruntime``); else NumPy. Every route is held to the
same fidelity bound against the original model, so they share one ``model_id``.

On the NumPy route the matmuls run in numpy's BLAS. A server whose concurrency comes from worker threads is
better served by ``OPENBLAS_NUM_THREADS=1`` (set before numpy is imported, so by the operator or the launcher,
not here): on a shared machine a multi-threaded BLAS stalls small matmuls whenever one of its threads is descheduled.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import resources
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

from powercontext.inference.base import Vectors, l2_normalise, release_freed_heap
from powercontext.inference.bert import F32, BertEncoder
from powercontext.inference.errors import InferenceError, InferenceUnavailable
from powercontext.inference.onnx_minilm import OnnxMiniLM
from powercontext.inference.onnx_minilm import available as onnx_available
from powercontext.inference.openvino_minilm import OpenVinoMiniLM
from powercontext.inference.openvino_minilm import available as openvino_available
from powercontext.inference.quant import Int8Matrix

MODEL_NAME = "all-MiniLM-L6-v2"
CONVERSION = "int8-v1"  # part of model_id: a new conversion must not be compared with vectors of the old one
WEIGHTS_FORMAT = "powercontext-minilm-int8-v1"
DIMENSION = 384
LAYERS = 6
HEADS = 12
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model; longer inputs are truncated
# Attention scores cost batch * heads * length^2 floats and the feed-forward layer batch * length * 1536:
# bounding batch * length keeps a mini-batch of long texts near 13 MB of activations while short texts still batch
# widely. 1024 embeds as fast as 4096 did (NumPy 116 against 110 texts/s, OpenVINO 240 against 224 on the bench
# corpus) and lowers the process's peak by 70-140 MB (docs/evaluation.md, "Memory of the hybrid Server").
TOKEN_BUDGET = 1024

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


class SentenceEncoder(Protocol):
    """What ``embed_texts`` needs: ``BertEncoder`` (NumPy), ``OnnxMiniLM`` or ``OpenVinoMiniLM``."""

    @property
    def hidden_size(self) -> int: ...

    def mean_pooled(self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.bool_]) -> F32: ...


def embed_texts(
    encoder: SentenceEncoder,
    tokenizer: Tokenizer,
    texts: Sequence[str],
    *,
    batch_size: int = 64,
    token_budget: int = TOKEN_BUDGET,
    workers: int = 1,
) -> Vectors:
    """Embed with any encoder/tokenizer pair: texts are sorted by length and padded per mini-batch only.

    With ``workers`` > 1, mini-batches run on that many threads at once (both encoders release the GIL in
    their matmuls); a call that fits one mini-batch always runs on the calling thread.
    """
    hidden = encoder.hidden_size
    if not texts:
        return np.zeros((0, hidden), dtype=np.float32)
    # One encode per text, not encode_batch: its thread pool would compete with the matmuls for the same cores.
    encoded = [tokenizer.encode(text).ids for text in texts]
    lengths = np.array([len(ids) for ids in encoded])
    order = np.argsort(lengths, kind="stable")
    batches: list[npt.NDArray[np.intp]] = []
    start = 0
    while start < len(order):
        # Lengths ascend, so the last text of a mini-batch sets its padded length.
        end = start + 1
        while end < len(order) and end - start < batch_size and (end - start + 1) * lengths[order[end]] <= token_budget:
            end += 1
        batches.append(order[start:end])
        start = end
    out = np.empty((len(texts), hidden), dtype=np.float32)

    def run(members: npt.NDArray[np.intp]) -> None:
        width = int(lengths[members[-1]])
        ids = np.zeros((len(members), width), dtype=np.int64)
        mask = np.zeros((len(members), width), dtype=np.bool_)
        for row, index in enumerate(members):
            ids[row, : lengths[index]] = encoded[index]
            mask[row, : lengths[index]] = True
        out[members] = encoder.mean_pooled(ids, mask)

    if workers > 1 and len(batches) > 1:
        with ThreadPoolExecutor(max_workers=min(workers, len(batches)), thread_name_prefix="minilm") as pool:
            for _ in pool.map(run, batches):  # re-raises a worker's exception here
                pass
    else:
        for members in batches:
            run(members)
    return l2_normalise(out)


Backend = Literal["auto", "openvino", "onnx", "numpy"]
Route = Literal["openvino", "onnx", "numpy"]
BACKENDS: tuple[Backend, ...] = ("auto", "openvino", "onnx", "numpy")


@dataclass(frozen=True)
class _Model:
    encoder: SentenceEncoder
    tokenizer: Tokenizer
    backend: Route
    # Whether mini-batches may run side by side: not on a route whose one compiled stream uses every thread.
    parallel_batches: bool = True


# Where a route comes from, for the error that names what to install.
_EXTRAS: dict[Route, str] = {"openvino": "embeddings-fast", "onnx": "embeddings-onnx", "numpy": "embeddings"}


def _route_available(route: Route) -> bool:
    if route == "openvino":
        return openvino_available()
    if route == "onnx":
        return onnx_available()
    return True


def missing_extra(backend: Backend) -> str | None:
    """The extra to install for a requested ``backend``, or ``None`` when it can run (``auto`` always can)."""
    if backend == "auto" or _route_available(backend):
        return None
    return _EXTRAS[backend]


def default_threads() -> int:
    """One embedding thread per CPU this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class LocalMiniLM:
    """all-MiniLM-L6-v2 from the shipped weights: mean pooling over the attention mask, then L2 normalisation.

    Three routes compute the model; ``backend="auto"`` takes the first one installed: OpenVINO (bfloat16
    matmuls where the CPU has them, the ``embeddings-fast`` extra), ONNX Runtime's fused float32 kernels
    (``embeddings-onnx``), the pure-NumPy forward pass. All are held to cosine >= 0.999 against the float32
    original model and share one ``model_id`` (the float32 routes agree to 0.9999999, bfloat16 to about
    0.9998). A call with more than one mini-batch spreads them over ``threads`` threads (default: one per
    CPU); one short text always runs on one thread. These threads are the embedding's own: they do not
    change ``OPENBLAS_NUM_THREADS``, which the Server keeps at 1 for requests.

    The weights load on first use (or on ``load()``, to move that cost to start-up), once, under a lock;
    afterwards ``embed`` is safe to call from many threads at once: the model is read-only.
    """

    name = "local"
    model_id = f"local:{MODEL_NAME}:{CONVERSION}"
    dimension = DIMENSION
    configured = True

    def __init__(self, batch_size: int = 64, *, threads: int | None = None, backend: Backend = "auto") -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if threads is not None and threads < 1:
            raise ValueError("threads must be at least 1")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)}")
        self.batch_size = batch_size
        self.threads = default_threads() if threads is None else threads
        self.requested_backend: Backend = backend
        self._lock = threading.Lock()
        self._model: _Model | None = None

    @property
    def backend(self) -> str | None:
        """``openvino``, ``onnx`` or ``numpy`` once loaded; ``None`` before."""
        model = self._model
        return None if model is None else model.backend

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
            workers = self.threads if model.parallel_batches else 1
            vectors = embed_texts(model.encoder, model.tokenizer, texts, batch_size=self.batch_size, workers=workers)
        except InferenceError:
            raise
        except Exception as exc:  # e.g. MemoryError, or a non-str item the tokenizer rejects
            raise InferenceUnavailable(f"the local embedding model failed ({type(exc).__name__})") from None
        if len(texts) > self.batch_size:
            release_freed_heap()  # a bulk call's activations: tens of MB glibc would otherwise keep
        return vectors

    def call_budget_s(self, count: int) -> float | None:
        return None  # computation on this machine: nothing to wait for but the CPU

    def close(self) -> None:
        """Drop the weights (about 60 MB, twice that with the ONNX session); a later ``embed`` loads them again."""
        with self._lock:
            self._model = None

    def _loaded(self) -> _Model:
        model = self._model
        if model is not None:
            return model
        with self._lock:
            if self._model is None:
                self._model = self._build()
                release_freed_heap()  # the float32 weights a compiled route was built from, now freed
            return self._model

    def _build(self) -> _Model:
        requested = self.requested_backend
        extra = missing_extra(requested)
        if extra is not None:
            raise InferenceUnavailable(
                f"the {requested} backend of the local embedding model needs the '{extra}' extra:"
                f" pip install 'powercontext[{extra}]'"
            )
        try:
            encoder, tokenizer = load_encoder(), load_tokenizer()
        except Exception as exc:  # a broken install: missing or damaged package data
            raise InferenceUnavailable(
                f"the local embedding model could not be loaded ({type(exc).__name__})"
            ) from None
        routes: tuple[Route, ...] = ("openvino", "onnx", "numpy") if requested == "auto" else (requested,)
        for route in routes:
            if not _route_available(route):
                continue
            try:
                return self._start(route, encoder, tokenizer)
            except Exception as exc:  # a runtime build without the kernels this route uses, say
                if route == requested:
                    raise InferenceUnavailable(
                        f"the {route} backend of the local embedding model could not start ({type(exc).__name__})"
                    ) from None
        return self._start("numpy", encoder, tokenizer)

    def _start(self, route: Route, encoder: BertEncoder, tokenizer: Tokenizer) -> _Model:
        if route == "openvino":
            return _Model(OpenVinoMiniLM(encoder, threads=self.threads), tokenizer, route, parallel_batches=False)
        if route == "onnx":
            return _Model(OnnxMiniLM(encoder), tokenizer, route)
        return _Model(encoder, tokenizer, route)
