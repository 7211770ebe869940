"""fts, vector and hybrid search over any family's active heads, with the ``auto`` policy resolved honestly.

A family plugs in two ranked readers (full text, and vector when it stores embeddings); the modes,
the fusion and the fallback reasons are the same for every family.
"""

from __future__ import annotations

import contextvars
import dataclasses
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from powercontext.contract.common import SearchModePolicy
from powercontext.domain.errors import RequestRefused
from powercontext.domain.identity import ArtifactKey
from powercontext.inference.errors import InferenceError, InferenceTimeout
from powercontext.search.channel_list import ChannelList, H, ScoredHit, channel_depth, floored
from powercontext.search.crowding import crowding, decrowded
from powercontext.search.embedding import FallbackReason, GuardedEmbedder, VectorChannel
from powercontext.search.fusion import fuse, fuse_scores
from powercontext.search.model_scripts import model_reads
from powercontext.search.relevance import BelowFloor, RelevanceFloor
from powercontext.text.normalize import normalize_query
from powercontext.text.tokenize import only_function_words, query_terms

ActualMode = Literal["fts", "vector", "hybrid"]
Vector = npt.NDArray[np.float32]


class ChannelProbe(Protocol):
    """Receives one search's ranked lists (explain only; see ``recall.probe``): which channel, in rank order,
    and the hits each channel's relevance floor dropped."""

    def record(self, channel: Literal["fts", "vector", "fused"], hits: Sequence[ScoredHit]) -> None: ...
    def below_floor(self, dropped: Sequence[BelowFloor]) -> None: ...


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


Fusion = Literal["score", "rrf"]
FUSIONS: tuple[Fusion, ...] = ("score", "rrf")
# Distinct query terms handed to a family's full-text reader. The reader keeps the rarest it can afford
# (the Atomic Memory store ranks them by document frequency under a posting budget), so a long query,
# an agent's whole prompt, keeps its distinctive terms wherever they occur instead of its first 32.
SEARCH_QUERY_TERMS = 256


@dataclass(frozen=True)
class HybridWeights:
    """How the full-text and vector rankings of one hybrid search are fused.

    ``score`` (default): each channel's scores are min-max normalised over the list it returned, then
    summed with the channel weights (relative-score fusion). ``rrf``: Σ weight / (k + rank).
    """

    fts: float = 1.0
    vector: float = 1.0
    k: int = 60
    fusion: Fusion = "score"


@dataclass(frozen=True, slots=True)
class SearchOutcome(Generic[H]):
    """What ran: the actual mode (never ``auto``) and why it differs from the request, if it does."""

    hits: list[H]
    mode: ActualMode
    fallback_reason: FallbackReason
    # The hits the channels read but their relevance floors dropped (and fusion did not keep), in rank order:
    # never results, but a newer statement on the subject of a kept hit may be found among them
    # (recall/supersession.py).
    below_floor: list[H] = dataclasses.field(default_factory=list)
    # Stored embeddings of hits the search already read (``hit_vectors``), by key, for a caller that needs them.
    stored_vectors: Mapping[ArtifactKey, Vector] = dataclasses.field(default_factory=dict)


T = TypeVar("T")


TextReader = Callable[[str, Sequence[str], int], list[H]]  # (scope_id, terms, limit)
VectorReader = Callable[[str, str, Vector, int], list[H]]  # (scope_id, model_id, vector, limit)
HitVectors = Callable[[str, str, Sequence[ArtifactKey]], Mapping[ArtifactKey, Vector]]  # stored, by key


class ChannelSearch(Generic[H]):
    """Searches one Scope of one family; ``vector`` is None for a family that stores no embeddings."""

    def __init__(
        self,
        text: TextReader[H],
        vector: VectorReader[H] | None,
        embedder: GuardedEmbedder,
        weights: HybridWeights | None = None,
        floor: RelevanceFloor | None = None,
        vectors_complete: Callable[[str], bool] | None = None,
        hit_vectors: HitVectors | None = None,
    ) -> None:
        """``floor`` (search/relevance.py) drops each channel's hits that are too weakly related to the query.
        ``vectors_complete(scope_id)`` says whether a Scope's stored vectors are complete; ``auto`` searches
        full text while they are not (a start-up backfill is still embedding them: ``search/backfill.py``).
        ``hit_vectors(scope_id, model_id, keys)`` reads the stored embeddings of vector hits, so fusion can weigh
        each by its cosine less its crowding (``search/crowding.py``)."""
        self._text = text
        self._vector = vector
        self._embedder = embedder
        self.weights = weights or HybridWeights()
        self._floor = floor
        self._vectors_complete = vectors_complete
        self._hit_vectors = hit_vectors

    @property
    def model_id(self) -> str:
        """The embedding model whose vectors this search compares."""
        return self._embedder.model_id

    @property
    def vectors_available(self) -> bool:
        return self._vector is not None and self._embedder.configured

    @property
    def available_modes(self) -> tuple[SearchModePolicy, ...]:
        """What works now: not ``vector``/``hybrid`` while the provider is in its post-failure cool-down."""
        healthy = self.vectors_available and self._embedder.open_reason() is None
        return ("auto", "fts", "vector", "hybrid") if healthy else ("auto", "fts")

    def search(
        self,
        scope_id: str,
        query: str,
        mode: SearchModePolicy,
        limit: int,
        *,
        channel: VectorChannel | None = None,
        round: int = 0,
        depth: int | None = None,
        probe: ChannelProbe | None = None,
    ) -> SearchOutcome[H]:
        """``depth`` (at least ``limit``) asks for more hits than ``limit`` for the caller's own re-ordering; the
        first ``limit`` of them are still exactly what a search at ``limit`` returns (hybrid fusion keeps the
        channel depth of ``limit``). ``probe`` (explain only) receives each channel's ranked list as this search
        computed it."""
        outcome = self._search(scope_id, query, mode, limit, max(limit, depth or limit), channel, round, probe)
        if probe is not None and outcome.mode != "hybrid":
            probe.record(outcome.mode, outcome.hits)
            probe.record("fused", outcome.hits)
        return outcome

    def _search(
        self,
        scope_id: str,
        query: str,
        mode: SearchModePolicy,
        limit: int,
        depth: int,
        channel: VectorChannel | None,
        round: int,
        probe: ChannelProbe | None,
    ) -> SearchOutcome[H]:
        normalized = normalize_query(query)
        if mode in ("vector", "hybrid") and not self.vectors_available:
            raise ModeUnavailable(mode)
        if only_function_words(normalized):
            # Nothing in it names a topic: every channel's best match would be noise (a vector of "what is
            # this" is near everything), so no channel runs. The mode reported is the one that would have run.
            vectors = mode in ("vector", "hybrid") or (mode == "auto" and self.vectors_available)
            return SearchOutcome([], ("vector" if mode == "vector" else "hybrid") if vectors else "fts", "none")
        if mode == "fts" or (mode == "auto" and not self._vectors_serve(scope_id, normalized)):
            return self._fts_only(scope_id, normalized, limit, depth, probe, "none")
        if mode in ("vector", "hybrid"):
            try:
                vector: Vector = self._embedder.embed([normalized])[0]
            except InferenceError as exc:
                raise SearchInferenceFailed(exc) from None
            if mode == "vector":
                return _single(self._vector_list(scope_id, vector, depth, probe), "vector", "none")
            return self._hybrid(scope_id, normalized, vector, limit, depth, probe)
        # auto: hybrid when the provider is configured and answers, else fts with the honest reason.
        channel = channel or VectorChannel(self._embedder)
        if channel.will_compute(scope_id, normalized):
            return self._auto_overlapped(scope_id, normalized, limit, depth, channel, round, probe)
        planned = channel.query_vector(round, normalized, scope_id)
        if isinstance(planned, str):
            return self._fts_only(scope_id, normalized, limit, depth, probe, planned)
        return self._hybrid(scope_id, normalized, planned, limit, depth, probe)

    def _complete(self, scope_id: str) -> bool:
        return self._vectors_complete is None or self._vectors_complete(scope_id)

    def _vectors_serve(self, scope_id: str, normalized: str) -> bool:
        """Whether ``auto`` uses the vector channel: there is one, the Scope's vectors are complete, and the model
        can read the query (search/model_scripts.py)."""
        return (
            self._vector is not None
            and self._complete(scope_id)
            and model_reads(self._embedder.model_id, normalized)
        )

    def _auto_overlapped(
        self,
        scope_id: str,
        normalized: str,
        limit: int,
        depth: int,
        channel: VectorChannel,
        round: int,
        probe: ChannelProbe | None,
    ) -> SearchOutcome[H]:
        """``auto`` with the vector side (embed the query, rank by cosine) on another thread while the
        full-text search runs on this one.

        Only for a model computed in this process: the model's matmuls, the cosine ranking and SQLite's search
        all release the GIL, so on two cores the vector side no longer adds its whole time to the prepare. A
        remote provider's call stays on the request thread, where its deadline and the breaker govern it
        without queueing behind other requests. The full-text list is the hybrid depth; if the vector channel
        drops out, the fts answer is searched again at ``depth`` so it is exactly what a plain fts search returns.
        """
        reach = channel_depth(limit)

        def vector_side() -> tuple[Vector | FallbackReason, ChannelList[H]]:
            planned = channel.query_vector(round, normalized, scope_id)
            if isinstance(planned, str):
                return planned, ChannelList([], None)
            return planned, self._vector_list(scope_id, planned, reach, probe)

        pending = _submit(vector_side)
        fts = self._fts_list(scope_id, normalized, reach, probe)
        planned, vec = pending.result()
        if isinstance(planned, str):
            return self._fts_only(scope_id, normalized, limit, depth, probe, planned)
        return self._fuse(fts, vec, depth, probe)

    def _fts_only(
        self,
        scope_id: str,
        normalized: str,
        limit: int,
        depth: int,
        probe: ChannelProbe | None,
        reason: FallbackReason,
    ) -> SearchOutcome[H]:
        """Full text alone. With the floor's IDF shares, the hits BM25 ranked are ordered by BM25 and query
        coverage together (each mapped onto 0..1 over the list read, then summed), like hybrid fusion with
        coverage in the place of the cosine. The list read is as deep as a hybrid channel's for ``limit``, so
        the first ``limit`` hits do not depend on ``depth``."""
        found = self._fts_list(scope_id, normalized, max(depth, channel_depth(limit)), probe)
        if found.fusion_hits is None:
            return SearchOutcome(found.hits[:depth], "fts", reason, found.dropped)
        ordered = fuse_scores(
            [(found.hits, 1.0), (found.fusion_hits, 1.0)], depth, ranges=[found.read_range, found.fusion_range]
        )
        return SearchOutcome(ordered, "fts", reason, found.dropped)

    def _fts_list(self, scope_id: str, normalized: str, limit: int, probe: ChannelProbe | None) -> ChannelList[H]:
        terms = query_terms(normalized, SEARCH_QUERY_TERMS)
        hits = self._text(scope_id, terms, limit)
        if self._floor is None:
            return ChannelList(hits, None)
        kept, dropped, shares = self._floor.fts_shares(scope_id, terms, hits)
        if probe is not None and dropped:
            probe.below_floor(dropped)
        found = floored(hits, kept)
        if not shares:
            return found
        # Fusion weighs a full-text hit by how much of the query it covers (its IDF share), not by BM25.
        share_of = {hit.record.key: share for hit, share in zip(hits, shares, strict=True)}
        covered = [dataclasses.replace(hit, score=share_of[hit.record.key]) for hit in kept]  # type: ignore[type-var]
        return dataclasses.replace(found, fusion_hits=covered, fusion_range=(min(shares), max(shares)))

    def _vector_list(self, scope_id: str, vector: Vector, limit: int, probe: ChannelProbe | None) -> ChannelList[H]:
        assert self._vector is not None
        hits = self._vector(scope_id, self._embedder.model_id, vector, limit)
        if self._floor is None:
            return ChannelList(hits, None)
        kept, dropped = self._floor.vector(self._embedder.model_id, hits)
        if probe is not None and dropped:
            probe.below_floor(dropped)
        found = floored(hits, kept)
        if self._hit_vectors is None or len(kept) < 3:
            return found
        stored = self._hit_vectors(scope_id, self._embedder.model_id, [hit.record.key for hit in kept])
        weighed = decrowded([hit.score for hit in kept], crowding([stored.get(hit.record.key) for hit in kept]))
        scored = [dataclasses.replace(hit, score=w) for hit, w in zip(kept, weighed, strict=True)]  # type: ignore[type-var]
        return dataclasses.replace(
            found, fusion_hits=scored, fusion_range=(min(weighed), max(weighed)), stored=stored
        )

    def _hybrid(
        self, scope_id: str, normalized: str, vector: Vector, limit: int, depth: int, probe: ChannelProbe | None
    ) -> SearchOutcome[H]:
        reach = channel_depth(limit)
        fts = self._fts_list(scope_id, normalized, reach, probe)
        vec = self._vector_list(scope_id, vector, reach, probe)
        return self._fuse(fts, vec, depth, probe)

    def _fuse(
        self, fts: ChannelList[H], vec: ChannelList[H], limit: int, probe: ChannelProbe | None
    ) -> SearchOutcome[H]:
        """Fuses the floored lists; score fusion maps each channel's scores by the range of the whole list it
        read, so the floor decides which hits take part but not how the remaining ones weigh against each other."""
        w = self.weights
        if w.fusion == "rrf":
            fused = fuse([(fts.hits, w.fts), (vec.hits, w.vector)], w.k, limit)
        else:
            lists = [(fts.fused_hits, w.fts), (vec.fused_hits, w.vector)]
            fused = fuse_scores(lists, limit, ranges=[fts.fused_range, vec.fused_range])
        if probe is not None:
            probe.record("fts", fts.hits)
            probe.record("vector", vec.hits)
            probe.record("fused", fused)
        fused_keys = {hit.record.key for hit in fused}
        below: dict[ArtifactKey, H] = {}
        for hit in (*fts.dropped, *vec.dropped):
            if hit.record.key not in fused_keys:
                below.setdefault(hit.record.key, hit)
        return SearchOutcome(fused, "hybrid", "none", list(below.values()), vec.stored)


def _single(found: ChannelList[H], mode: ActualMode, reason: FallbackReason) -> SearchOutcome[H]:
    return SearchOutcome(found.hits, mode, reason, found.dropped, found.stored)


_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _submit(fn: Callable[..., T], *args: Any) -> Future[T]:
    """Run ``fn`` on the shared vector-side threads, in the caller's context (its observation, deadline).

    Eight threads: the local model and the cosine ranking are CPU-bound, so more would only queue on the cores.
    """
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="vector-side")
        pool = _pool
    return pool.submit(contextvars.copy_context().run, fn, *args)
