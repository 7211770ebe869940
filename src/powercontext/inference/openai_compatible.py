"""Embeddings from any server that speaks the OpenAI ``POST /embeddings`` shape (vLLM, llama.cpp, TEI, ...)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from powercontext.inference.base import Vectors, l2_normalise
from powercontext.inference.deadline import ProviderClient
from powercontext.inference.errors import InferenceUnavailable

# A JSON float takes at most ~25 characters; the answer may carry that per value plus some framing, no more.
_BYTES_PER_VALUE = 32
_ANSWER_FRAMING_BYTES = 64 * 1024


class OpenAICompatibleEmbeddings:
    """A thread-safe client: one connection pool is shared by every caller.

    ``timeout_s`` is the total deadline of each HTTP request, from waiting for a pooled connection to the
    last byte of the answer: a server that trickles its answer is cut off at the deadline, not after each
    slow read. A call with more texts than ``batch_size`` makes one request per batch, in order, each with
    its own deadline.
    """

    name = "openai-compatible"
    configured = True

    def __init__(
        self,
        base_url: str,
        model: str,
        dimension: int,
        *,
        api_key: str | None = None,
        timeout_s: float = 2.0,
        batch_size: int = 64,
    ) -> None:
        if dimension < 1:
            raise ValueError("dimension must be at least 1")
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.model = model
        self.dimension = dimension
        self.model_id = f"openai-compatible:{model}:{dimension}"
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self._client = ProviderClient(base_url.rstrip("/") + "/embeddings", "embedding", api_key=api_key)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if isinstance(texts, str):  # a bare string is a Sequence[str] of characters: almost surely a mistake
            raise TypeError("embed takes a sequence of texts, not one string")
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [self._embed_batch(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def call_budget_s(self, count: int) -> float | None:
        return self.timeout_s * max(1, -(-count // self.batch_size))

    def close(self) -> None:
        self._client.close()

    def _embed_batch(self, texts: Sequence[str]) -> Vectors:
        body = json.dumps({"model": self.model, "input": list(texts)}, ensure_ascii=False).encode("utf-8")
        cap = self._answer_cap(len(texts))
        raw = self._client.post(body, self.timeout_s, cap)
        try:
            payload = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            raise InferenceUnavailable("the embedding server answered with a body that is not JSON") from None
        return l2_normalise(self._vectors(payload, len(texts)))

    def _answer_cap(self, count: int) -> int:
        return _ANSWER_FRAMING_BYTES + count * self.dimension * _BYTES_PER_VALUE

    def _vectors(self, payload: Any, count: int) -> np.ndarray[Any, np.dtype[np.float64]]:
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
            raise InferenceUnavailable("the embedding server answered without a list of embeddings in 'data'")
        if len(data) != count:
            raise InferenceUnavailable(f"the embedding server answered {len(data)} embeddings for {count} inputs")
        indexes = [item.get("index") for item in data]
        if all(index is None for index in indexes):
            ordered = data
        elif sorted(i for i in indexes if type(i) is int) == list(range(count)):
            ordered = sorted(data, key=lambda item: int(item["index"]))
        else:
            raise InferenceUnavailable("the embedding server answered 'index' values that are not 0..n-1")
        rows = [item.get("embedding") for item in ordered]
        if not all(isinstance(row, list) and len(row) == self.dimension for row in rows):
            raise InferenceUnavailable(f"the embedding server answered vectors that are not {self.dimension} long")
        try:
            matrix = np.array(rows)
        except (ValueError, TypeError):
            raise InferenceUnavailable("the embedding server answered non-numeric vector values") from None
        # numpy would happily parse strings or keep objects (None): only real numbers count.
        if matrix.dtype.kind not in "iuf" or matrix.shape != (count, self.dimension):
            raise InferenceUnavailable("the embedding server answered non-numeric vector values")
        if not np.all(np.isfinite(matrix)):
            raise InferenceUnavailable("the embedding server answered non-finite vector values")
        return matrix.astype(np.float64, copy=False)
