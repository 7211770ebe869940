"""Atomic Memory search over active heads: fts, vector, hybrid, and the ``auto`` policy resolved honestly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from powercontext.contract.common import SearchModePolicy
from powercontext.domain.errors import RequestRefused
from powercontext.inference.errors import InferenceError, InferenceTimeout
from powercontext.search.embedding import FallbackReason, GuardedEmbedder, VectorChannel
from powercontext.store.base import ScoredMemory, Store
from powercontext.text.normalize import normalize_query
from powercontext.text.tokenize import query_terms

ActualMode = Literal["fts", "vector", "hybrid"]


class ModeUnavailable(RequestRefused):
    code, status = "mode-unavailable", 409

    def __init__(self, mode: str) -> None:
        super().__init__(
            f"search mode {mode!r} needs an embedding provider, and none is configured; use mode 'fts' or 'auto', "
            "or configure one (POWERCONTEXT_EMBEDDINGS, see docs/configuration.md)"
        )


class SearchInferenceFailed(RequestRefused):
    """An explicit ``vector`` or ``hybrid`` search whose query embedding failed."""

    def __init__(self, error: InferenceError) -> None:
        timeout = isinstance(error, InferenceTimeout)
        self.code = "inference-timeout" if timeout else "inference-unavailable"
        self.status = 504 if timeout else 503
        what = "did not answer in time" if timeout else "is unavailable"
        super().__init__(f"the embedding provider {what}; retry, or search with mode 'fts' or 'auto'")


@dataclass(frozen=True)
class HybridWeights:
    """Reciprocal-rank fusion: score = Σ weight / (k + rank), rank from 1 in each channel."""

    fts: float = 1.0
    vector: float = 1.0
    k: int = 60


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """What ran: the actual mode (never ``auto``) and why it differs from the request, if it does."""

    hits: list[ScoredMemory]
    mode: ActualMode
    fallback_reason: FallbackReason


def fuse(channels: list[tuple[list[ScoredMemory], float]], k: int, limit: int) -> list[ScoredMemory]:
    """Reciprocal-rank fusion of ranked lists; ties keep first-seen order (fts before vector)."""
    scores: dict[tuple[str, int], float] = {}
    records: dict[tuple[str, int], ScoredMemory] = {}
    for hits, weight in channels:
        for rank, hit in enumerate(hits, start=1):
            key = (hit.record.key.artifact_id, hit.record.key.revision)
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
            records.setdefault(key, hit)
    ordered = sorted(scores, key=lambda key: -scores[key])[:limit]
    return [ScoredMemory(records[key].record, scores[key]) for key in ordered]


class AtomicMemorySearch:
    """Searches one Scope's active Atomic Memory heads."""

    def __init__(self, store: Store, embedder: GuardedEmbedder, weights: HybridWeights | None = None) -> None:
        self._store = store
        self._embedder = embedder
        self.weights = weights or HybridWeights()

    @property
    def available_modes(self) -> tuple[SearchModePolicy, ...]:
        return ("auto", "fts", "vector", "hybrid") if self._embedder.configured else ("auto", "fts")

    def search(
        self,
        scope_id: str,
        query: str,
        mode: SearchModePolicy,
        limit: int,
        *,
        channel: VectorChannel | None = None,
        round: int = 0,
    ) -> SearchOutcome:
        normalized = normalize_query(query)
        if mode == "fts":
            return SearchOutcome(self._fts(scope_id, normalized, limit), "fts", "none")
        if mode in ("vector", "hybrid"):
            if not self._embedder.configured:
                raise ModeUnavailable(mode)
            try:
                vector = self._embedder.embed([normalized])[0]
            except InferenceError as exc:
                raise SearchInferenceFailed(exc) from None
            if mode == "vector":
                return SearchOutcome(self._vector(scope_id, vector, limit), "vector", "none")
            return SearchOutcome(self._hybrid(scope_id, normalized, vector, limit), "hybrid", "none")
        # auto: hybrid when the provider is configured and answers, else fts with the honest reason.
        channel = channel or VectorChannel(self._embedder)
        planned = channel.query_vector(round, normalized)
        if isinstance(planned, str):
            return SearchOutcome(self._fts(scope_id, normalized, limit), "fts", planned)
        return SearchOutcome(self._hybrid(scope_id, normalized, planned, limit), "hybrid", "none")

    def _fts(self, scope_id: str, normalized: str, limit: int) -> list[ScoredMemory]:
        return self._store.search_text(scope_id, query_terms(normalized), limit)

    def _vector(self, scope_id: str, vector: npt.NDArray[np.float32], limit: int) -> list[ScoredMemory]:
        return self._store.search_vector(scope_id, self._embedder.model_id, vector, limit)

    def _hybrid(
        self, scope_id: str, normalized: str, vector: npt.NDArray[np.float32], limit: int
    ) -> list[ScoredMemory]:
        # Each channel contributes a deeper list than asked for, so fusion can promote an item that
        # only one channel ranks highly.
        depth = max(2 * limit, 32)
        w = self.weights
        channels = [(self._fts(scope_id, normalized, depth), w.fts), (self._vector(scope_id, vector, depth), w.vector)]
        return fuse(channels, w.k, limit)
