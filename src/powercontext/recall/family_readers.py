"""Readers of the Topic Memory, Experience and Profile families."""

from __future__ import annotations

from powercontext.contract.common import Family
from powercontext.domain.candidates import CANDIDATE_LIMITS, Candidate, round_robin
from powercontext.recall.readers import RecallContext, ScopePools
from powercontext.search.channels import ChannelSearch
from powercontext.search.families import ExperienceSearch
from powercontext.store.base import FamilyStore, ScoredTopic

TOPIC_CANDIDATE_LIMIT = CANDIDATE_LIMITS["topic-memory"]
EXPERIENCE_CANDIDATE_LIMIT = CANDIDATE_LIMITS["experience"]


class TopicMemoryReader:
    """Topic Memory of the request Scope only: one search per round, not one per referenced Scope."""

    family: Family = "topic-memory"

    def __init__(self, search: ChannelSearch[ScoredTopic], limit: int = TOPIC_CANDIDATE_LIMIT) -> None:
        self._search = search
        self._limit = limit

    def read(self, ctx: RecallContext) -> list[Candidate]:
        return self.read_groups(ctx)[0][1]

    def read_groups(self, ctx: RecallContext, limit: int | None = None) -> ScopePools:
        scope_id = ctx.scope_ids[0]
        probe = None if ctx.trace.probe is None else ctx.trace.probe.channel(ctx.round, self.family, scope_id)
        with ctx.trace.stage("topic_memory.search"):
            outcome = self._search.search(
                scope_id, ctx.query, "auto", limit or self._limit, channel=ctx.channel, round=ctx.round, probe=probe
            )
        ctx.trace.record_search(ctx.round, self.family, outcome.mode, "completed", outcome.fallback_reason)
        return [
            (
                scope_id,
                [Candidate(h.record.key, "topic", h.record.render_text(), h.record.created_at) for h in outcome.hits],
            )
        ]


class ExperienceReader:
    """Experience of every Scope; each keeps its order and the Scopes interleave, request Scope first."""

    family: Family = "experience"

    def __init__(self, search: ExperienceSearch, per_scope_limit: int = EXPERIENCE_CANDIDATE_LIMIT) -> None:
        self._search = search
        self._limit = per_scope_limit

    def read(self, ctx: RecallContext) -> list[Candidate]:
        return round_robin([pool for _, pool in self.read_groups(ctx)])

    def read_groups(self, ctx: RecallContext, limit: int | None = None) -> ScopePools:
        groups: ScopePools = []
        for scope_id in ctx.scope_ids:
            with ctx.trace.stage("experience.search"):
                outcome = self._search.search(scope_id, ctx.query, limit or self._limit)
            # The adapter says which mode ran; it is recorded as given.
            ctx.trace.record_search(ctx.round, self.family, outcome.mode, "completed", "none")
            if ctx.trace.probe is not None:  # full text is Experience's only channel: its list is the pool
                recorder = ctx.trace.probe.channel(ctx.round, self.family, scope_id)
                recorder.record("fts", outcome.hits)
                recorder.below_floor(outcome.below_floor)
                recorder.record("fused", outcome.hits)
            pool = [
                Candidate(h.record.key, "experience", h.record.render_text(), h.record.created_at) for h in outcome.hits
            ]
            groups.append((scope_id, pool))
        return groups


class ProfileReader:
    """The committed Profile snapshot of the request Scope, then of each referenced Scope.

    Query-independent. A Scope without a committed Profile is a skipped read (``not_run``): Profile
    is the family whose reader needs a head.
    """

    family: Family = "profile"

    def __init__(self, store: FamilyStore) -> None:
        self._store = store

    def read(self, ctx: RecallContext) -> list[Candidate]:
        candidates = []
        for scope_id in ctx.scope_ids:
            with ctx.trace.stage("profile.read"):
                snapshot = self._store.read_profile_snapshot(scope_id)
            if snapshot is None:
                ctx.trace.record_search(0, self.family, "none", "not_run", "none")
                continue
            ctx.trace.record_search(0, self.family, "snapshot", "completed", "none")
            if ctx.trace.probe is not None:
                ctx.trace.probe.unsearched(0, self.family, scope_id, [snapshot.key])
            candidates.append(Candidate(snapshot.key, "profile", snapshot.render_text(), snapshot.created_at))
        return candidates
