"""Family readers: each turns one prepare's query into candidates and records every call it makes.

A reader is the only place that knows a family's retrieval mode, so the Receipt's search groups
are exactly what the readers recorded (the Runtime never infers a mode from a reader's presence).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from powercontext.contract.common import Family
from powercontext.domain.candidates import CANDIDATE_LIMITS, Candidate, CodeCandidate, round_robin
from powercontext.domain.identity import ArtifactKey
from powercontext.recall.probe import ChannelRecorder
from powercontext.recall.successor_probe import SuccessorProbe
from powercontext.recall.supersession import SEARCH_DEPTH_FACTOR, Vector, asks_for_history, newer_first
from powercontext.recall.trace import RecallTrace
from powercontext.search.channel_list import ScoredHit
from powercontext.search.channels import ChannelSearch, SearchOutcome
from powercontext.search.code import CodeSearch
from powercontext.search.embedding import VectorChannel
from powercontext.search.relevance import BelowFloor
from powercontext.store.base import ScoredMemory
from powercontext.store.code import CodeStore

ATOMIC_CANDIDATE_LIMIT = CANDIDATE_LIMITS["atomic-memory"]
CODE_CANDIDATE_LIMIT = CANDIDATE_LIMITS["code"]


@dataclass
class RecallContext:
    """What every reader of one prepare round shares."""

    query: str
    scope_ids: tuple[str, ...]  # the request Scope first, then its context references in order
    trace: RecallTrace
    channel: VectorChannel
    round: int = 0


ScopePools = list[tuple[str, list[Candidate]]]  # (scope_id, that Scope's candidates in rank order)
# (scope_id, model_id, keys) -> the stored embeddings of those revisions (``Store.memory_vectors``)
StoredVectors = Callable[[str, str, Sequence[ArtifactKey]], dict[ArtifactKey, Vector]]


class FamilyReader(Protocol):
    family: Family

    def read(self, ctx: RecallContext) -> list[Candidate]: ...


@runtime_checkable
class SearchableReader(FamilyReader, Protocol):
    """A family that is searched by query, so expansion rounds can search it again with another query."""

    def read_groups(self, ctx: RecallContext, limit: int | None = None) -> ScopePools:
        """Each searched Scope's pool (``limit`` per Scope instead of the family's own, when given)."""
        ...


class CodeReader(Protocol):
    def read(self, ctx: RecallContext) -> list[CodeCandidate]: ...


class AtomicMemoryReader:
    """Searches every Scope; each Scope keeps its hit order and the Scopes interleave, request Scope first
    (scores of different Scopes are not comparable)."""

    family: Family = "atomic-memory"

    def __init__(
        self,
        search: ChannelSearch[ScoredMemory],
        per_scope_limit: int = ATOMIC_CANDIDATE_LIMIT,
        stored_vectors: StoredVectors | None = None,
        successor_probe: SuccessorProbe | None = None,
    ) -> None:
        """``stored_vectors`` lets the newer-first rule compare the hits' own embeddings when the search used
        vectors (recall/supersession.py); without it the rule uses terms alone. ``successor_probe`` offers the
        rule later statements of change that share no word with the query (recall/successor_probe.py)."""
        self._search = search
        self._limit = per_scope_limit
        self._stored_vectors = stored_vectors
        self._successor_probe = successor_probe

    def read(self, ctx: RecallContext) -> list[Candidate]:
        return round_robin([pool for _, pool in self.read_groups(ctx)])

    def read_groups(self, ctx: RecallContext, limit: int | None = None) -> ScopePools:
        groups: ScopePools = []
        pool = limit or self._limit
        history = asks_for_history(ctx.query)
        for scope_id in ctx.scope_ids:
            recorder = None if ctx.trace.probe is None else ctx.trace.probe.channel(ctx.round, self.family, scope_id)
            with ctx.trace.stage("memory.search"):
                outcome = self._search.search(
                    scope_id,
                    ctx.query,
                    "auto",
                    pool,
                    channel=ctx.channel,
                    round=ctx.round,
                    depth=pool if history else pool * SEARCH_DEPTH_FACTOR,
                    probe=None if recorder is None else _ChannelsOnly(recorder),
                )
                if history:
                    hits = outcome.hits[:pool]
                else:
                    extra = self._successor_candidates(scope_id, outcome)
                    hits = newer_first(
                        outcome.hits, pool, _observed, _text, self._hit_vectors(scope_id, outcome, extra), extra
                    )
            if recorder is not None:  # the pool as the Builder receives it: fused, then newer first
                recorder.record("fused", hits)
            ctx.trace.record_search(ctx.round, self.family, outcome.mode, "completed", outcome.fallback_reason)
            groups.append((scope_id, [_candidate(h) for h in hits]))
        return groups

    def _successor_candidates(self, scope_id: str, outcome: SearchOutcome[ScoredMemory]) -> list[ScoredMemory]:
        """Hits that may enter the pool only as a kept hit's successor, under full text only: those below the
        floor and what the probe finds, each once. Under hybrid the vector channel already reaches paraphrased
        successors, and the probe's candidates pushed answers the vectors had ranked first down (docs/evaluation.md,
        "Successors the query cannot find")."""
        extra = _successors_only(outcome)
        if self._successor_probe is None or outcome.mode != "fts" or not outcome.hits:
            return extra
        below = {hit.record.key for hit in extra}
        probed = [hit for hit in self._successor_probe(scope_id, outcome.hits) if hit.record.key not in below]
        return [*extra, *probed]

    def _hit_vectors(
        self, scope_id: str, outcome: SearchOutcome[ScoredMemory], extra: Sequence[ScoredMemory]
    ) -> Callable[[], list[Vector | None]] | None:
        """The hits' stored embeddings by the model that ranked them, read only if the rule asks; None when the
        search used no vectors (fts, or the provider failed): the rule then uses the same terms as without."""
        read = self._stored_vectors
        if read is None or outcome.mode == "fts":
            return None
        model_id = self._search.model_id

        def vectors() -> list[Vector | None]:
            hits = [*outcome.hits, *extra]  # the order newer_first reads them in
            known = outcome.stored_vectors  # those the search read already
            missing = [h.record.key for h in hits if h.record.key not in known]
            stored = {**known, **read(scope_id, model_id, missing)} if missing else known
            return [stored.get(h.record.key) for h in hits]

        return vectors


def _successors_only(outcome: SearchOutcome[ScoredMemory]) -> list[ScoredMemory]:
    """The hits below the relevance floor that may still enter as a kept hit's successor: under full text only.

    A statement that something changed ("EKS upgraded from 1.29 to 1.30") often shares one word with the question
    and its subject with the statement it replaces, so full text alone would drop it at the floor. Under hybrid
    the vector channel already vouches for such paraphrases, and pulling more from below the floor only pushed
    answers down (docs/evaluation.md, "The relevance floor")."""
    return outcome.below_floor if outcome.mode == "fts" else []


class _ChannelsOnly:
    """Passes a search's per-channel lists to the explain probe, but not its fused list: the reader records the
    pool itself, after the newer-first rule has ordered it."""

    __slots__ = ("_inner",)

    def __init__(self, inner: ChannelRecorder) -> None:
        self._inner = inner

    def record(self, channel: Literal["fts", "vector", "fused"], hits: Sequence[ScoredHit]) -> None:
        if channel != "fused":
            self._inner.record(channel, hits)

    def below_floor(self, dropped: Sequence[BelowFloor]) -> None:
        self._inner.below_floor(dropped)


def _observed(hit: ScoredMemory) -> str:
    return hit.record.observed


def _text(hit: ScoredMemory) -> str:
    return hit.record.text


def _candidate(hit: ScoredMemory) -> Candidate:
    record = hit.record
    return Candidate(record.key, record.kind, record.text, record.observed)


class CodeEvidenceReader:
    """One code query per prepare, for the request Scope, outside the expansion loop (round 0).

    A Scope with no registered work tree has nothing to query: that is a skipped opportunity
    (``not_run``), not a zero-hit search.
    """

    def __init__(self, store: CodeStore, search: CodeSearch, limit: int = CODE_CANDIDATE_LIMIT) -> None:
        self._store = store
        self._search = search
        self._limit = limit

    def read(self, ctx: RecallContext) -> list[CodeCandidate]:
        scope_id = ctx.scope_ids[0]
        with ctx.trace.stage("code.query"):
            if not self._store.has_code_trees(scope_id):
                hits = None
            else:
                hits, fallback = self._search.query_with_reason(
                    scope_id, ctx.query, self._limit, ctx.channel, probe=ctx.trace.probe
                )
        if hits is None:
            ctx.trace.record_search(0, "code", "none", "not_run", "none")
            return []
        ctx.trace.record_search(0, "code", "code", "completed", fallback)
        return [
            CodeCandidate(
                h.scope_id, h.fingerprint, h.path, h.file_sha256, h.start_line, h.end_line, h.snippet_sha256, h.text
            )
            for h in hits
        ]
