"""The explain operation: one prepare run with an ``ExplainProbe``, reported candidate by candidate.

Diagnostic only, never on the host path. Every rank, score and fate comes from the probe of the very run
whose PreparedContext is returned; only expected ids that run did not rank are looked for by a deeper
search, and that search is reported as such. No text leaves here: matched terms are the query's own terms.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from powercontext.code.identifiers import identifier_terms, path_terms
from powercontext.contract.common import Family
from powercontext.contract.explain import (
    BelowFloorHit,
    ChannelRank,
    ContextExplanation,
    ExpectedItem,
    ExplainContextRequest,
    ExplainedCandidate,
    FamilySummary,
    Fate,
    FloorReading,
)
from powercontext.contract.prepare import PrepareContextRequest, PreparedContext
from powercontext.domain.candidates import CodeCandidate
from powercontext.domain.identity import ArtifactKey, code_evidence_ref
from powercontext.prepare import PreparePipeline
from powercontext.recall import probe as probes
from powercontext.recall.readers import RecallContext
from powercontext.recall.trace import RecallTrace
from powercontext.search.channels import SEARCH_QUERY_TERMS
from powercontext.search.embedding import VectorChannel
from powercontext.sources.lineage import lineage_of
from powercontext.text.normalize import normalize_query
from powercontext.text.tokenize import query_terms, term_set

# How deep the search for an expected id the run did not rank goes, per Scope and family.
DEEP_LIMIT = 256


@dataclass
class _Ranked:
    """One identity's appearances in the run's ranked lists."""

    family: Family
    ranks: list[ChannelRank] = field(default_factory=list)
    pool_rank: int | None = None  # its rank in the first fused list (the pool) that held it
    pool_round: int = 0  # the round of that list

    def score(self, channel: str) -> float | None:
        return next((r.score for r in self.ranks if r.channel == channel), None)


def _ranked(lists: Sequence[probes.ChannelList]) -> dict[ArtifactKey, _Ranked]:
    found: dict[ArtifactKey, _Ranked] = {}
    for ranked_list in lists:
        for rank, (key, score) in enumerate(ranked_list.hits, start=1):
            entry = found.setdefault(key, _Ranked(ranked_list.family))
            entry.ranks.append(
                ChannelRank(
                    round=ranked_list.round,
                    scope_id=ranked_list.scope_id,
                    channel=ranked_list.channel,
                    rank=rank,
                    score=score,
                )
            )
            if ranked_list.channel == "fused" and entry.pool_rank is None:
                entry.pool_rank, entry.pool_round = rank, ranked_list.round
    return found


def _code_ranks(lists: Sequence[probes.CodeList]) -> dict[probes.CodeIdentity, dict[probes.Channel, tuple[int, float]]]:
    """Each code range's (rank, score) per channel of the run's one code search."""
    found: dict[probes.CodeIdentity, dict[probes.Channel, tuple[int, float]]] = {}
    for code_list in lists:
        for rank, (identity, score) in enumerate(code_list.hits, start=1):
            found.setdefault(identity, {}).setdefault(code_list.channel, (rank, score))
    return found


def _fate_text(fate: Fate) -> str:
    if fate.outcome == "selected":
        return f"selected at position {fate.position}"
    if fate.outcome == "omitted":
        return f"omitted: {fate.reason}"
    return f"found only by expansion round {fate.round}, which this prepare did not retain"


def _fate(fate: probes.Fate, offset: int = 0) -> Fate:
    if fate.position is not None:
        return Fate(
            outcome="selected",
            position=fate.position + offset,
            rendered_bytes=fate.rendered_bytes,
            truncated=fate.truncated,
        )
    return Fate(outcome="omitted", reason=fate.reason)


class ContextExplainer:
    """Runs a prepare with a probe and turns what it recorded into a ``ContextExplanation``."""

    def __init__(self, pipeline: PreparePipeline) -> None:
        self.pipeline = pipeline

    def explain(
        self, request: ExplainContextRequest, request_id: str, may_read: Callable[[str], bool]
    ) -> ContextExplanation:
        fields = {name: getattr(request, name) for name in request.model_fields_set if name != "expected"}
        prepare_request = PrepareContextRequest(**{**fields, "include_receipt": True})
        probe = probes.ExplainProbe()
        result = self.pipeline.prepare(prepare_request, request_id, may_read, probe)
        terms = query_terms(normalize_query(request.query), SEARCH_QUERY_TERMS)
        ranked = _ranked(probe.lists)
        candidates = self._historical(probe, ranked, terms, may_read)
        selected_history = sum(1 for c in candidates if c.fate.outcome == "selected")
        candidates += self._code(probe, result.code, selected_history)
        expected = [self._expected(a, ranked, probe, candidates) for a in dict.fromkeys(request.expected)]
        deeper = [e.artifact_id for e in expected if e.where == "not_found"]
        if deeper:
            found = self._deeper(prepare_request, result.scope_ids, may_read)
            expected = [self._deep(e, found) if e.artifact_id in deeper else e for e in expected]
        marked = {e.artifact_id for e in expected}
        candidates = [
            c.model_copy(update={"expected": True})
            if c.artifact_address is not None and c.artifact_address.artifact.artifact_id in marked
            else c
            for c in candidates
        ]
        candidates = _with_lineage(self.pipeline.store, candidates)
        plan = self.pipeline.plan(prepare_request)
        counts = {f: sum(1 for c in candidates if c.family == f) for f in plan.families}
        return ContextExplanation(
            prepared=PreparedContext.model_validate_json(result.response_body()),
            query_terms=terms,
            code_query_terms=list(probe.code_search_terms),
            families=[FamilySummary(family=f, pool_depth=self._depth(f), candidates=counts[f]) for f in plan.families],
            candidates=candidates,
            expected=expected,
            below_floor=_below_floor(probe),
        )

    def _depth(self, family: Family) -> int:
        return self.pipeline.limits.get(family, 0)

    def _historical(
        self,
        probe: probes.ExplainProbe,
        ranked: dict[ArtifactKey, _Ranked],
        terms: list[str],
        may_read: Callable[[str], bool],
    ) -> list[ExplainedCandidate]:
        """Every pool candidate with its fate: the one the run recorded, or ``not_retained`` when only an
        abandoned expansion round's pool held it (the build never saw it, so the run decided nothing)."""
        out: list[ExplainedCandidate] = []
        for key, entry in ranked.items():
            if entry.pool_rank is None or not may_read(key.scope_id):
                continue
            recorded = probe.fates.get(key)
            if recorded is not None:
                fate = _fate(recorded)
            elif not probe.rounds.get(entry.pool_round, True):
                fate = Fate(outcome="not_retained", round=entry.pool_round)
            else:
                continue
            text = probe.texts.get(key, "")
            present = term_set(text) if text else frozenset()
            out.append(
                ExplainedCandidate(
                    family=entry.family,
                    artifact_address=key.to_address(),
                    rank=entry.pool_rank,
                    ranks=entry.ranks,
                    bm25=entry.score("fts"),
                    cosine=entry.score("vector"),
                    fused=entry.score("fused") if entry.family != "profile" else None,
                    matched_terms=[t for t in terms if t in present],
                    fate=fate,
                )
            )
        return out

    def _code(self, probe: probes.ExplainProbe, code: Sequence[CodeCandidate], offset: int) -> list[ExplainedCandidate]:
        """The code search's answer in its order, with the ranks and scores that search recorded."""
        by_identity = _code_ranks(probe.code_lists)
        out: list[ExplainedCandidate] = []
        for rank, candidate in enumerate(code, start=1):
            identity = (candidate.fingerprint, candidate.path, candidate.start_line)
            fate = probe.code_fates.get(identity)
            if fate is None:
                continue
            channels = by_identity.get(identity, {})
            ranks = [
                ChannelRank(round=0, scope_id=candidate.scope_id, channel=channel, rank=r, score=score)
                for channel, (r, score) in channels.items()
            ]
            present = set(identifier_terms(candidate.text)) | set(path_terms(candidate.path))
            out.append(
                ExplainedCandidate(
                    family="code",
                    code_evidence=code_evidence_ref(candidate),
                    rank=rank,
                    ranks=ranks,
                    bm25=channels["fts"][1] if "fts" in channels else None,
                    cosine=channels["vector"][1] if "vector" in channels else None,
                    fused=channels["fused"][1] if "fused" in channels else None,
                    matched_terms=[t for t in probe.code_search_terms if t in present],
                    defines_query_identifier=identity in probe.code_defining,
                    fate=_fate(fate, offset),
                )
            )
        return out

    def _expected(
        self,
        artifact_id: str,
        ranked: dict[ArtifactKey, _Ranked],
        probe: probes.ExplainProbe,
        candidates: list[ExplainedCandidate],
    ) -> ExpectedItem:
        for c in candidates:
            if c.artifact_address is not None and c.artifact_address.artifact.artifact_id == artifact_id:
                return ExpectedItem(
                    artifact_id=artifact_id,
                    where="candidate",
                    family=c.family,
                    ranks=c.ranks,
                    pool_depth=self._depth(c.family),
                    fate=c.fate,
                    explanation=f"a candidate of this run, pool rank {c.rank}; {_fate_text(c.fate)}",
                )
        below_pool = self._ranked_below_pool(
            artifact_id,
            ranked,
            "below_pool",
            lambda best, depth: (
                f"ranked {best.rank} in this run's {best.channel} list, but the pool keeps the "
                f"first {depth} of the fused list: not_retrieved"
            ),
        )
        return below_pool or ExpectedItem(artifact_id=artifact_id, where="not_found", explanation="")

    def _ranked_below_pool(
        self,
        artifact_id: str,
        ranked: dict[ArtifactKey, _Ranked],
        where: Literal["below_pool", "deeper_search"],
        explain: Callable[[ChannelRank, int], str],
    ) -> ExpectedItem | None:
        """The expected item ``artifact_id`` where ``ranked`` lists it below the pool depth, explained from its
        best rank and that depth; None where ``ranked`` does not list it."""
        for key, entry in ranked.items():
            if key.artifact_id == artifact_id:
                best = min(entry.ranks, key=lambda r: r.rank)
                depth = self._depth(entry.family)
                return ExpectedItem(
                    artifact_id=artifact_id,
                    where=where,
                    family=entry.family,
                    ranks=entry.ranks,
                    pool_depth=depth,
                    explanation=explain(best, depth),
                )
        return None

    def _deeper(
        self, request: PrepareContextRequest, scope_ids: tuple[str, ...], may_read: Callable[[str], bool]
    ) -> dict[ArtifactKey, _Ranked]:
        """The run's searched families again, ``DEEP_LIMIT`` deep, for expected ids the run did not rank."""
        pipeline = self.pipeline
        plan = pipeline.plan(request)
        probe = probes.ExplainProbe()
        trace = RecallTrace(requested_families=plan.families, probe=probe)
        readable = tuple(s for s in scope_ids if may_read(s))
        ctx = RecallContext(normalize_query(request.query), readable, trace, VectorChannel(pipeline.embedder))
        try:
            for family in plan.families:
                reader = pipeline.searchable.get(family)
                if reader is not None and readable:
                    reader.read_groups(ctx, DEEP_LIMIT)
        finally:
            trace.finish()
        return _ranked(probe.lists)

    def _deep(self, item: ExpectedItem, found: dict[ArtifactKey, _Ranked]) -> ExpectedItem:
        deeper = self._ranked_below_pool(
            item.artifact_id,
            found,
            "deeper_search",
            lambda best, depth: (
                f"not in this run's lists; a search {DEEP_LIMIT} deep ranks it {best.rank} "
                f"({best.channel}), below the pool depth {depth}: not_retrieved"
            ),
        )
        return deeper or item.model_copy(
            update={
                "explanation": "no active head with this id in the searched Scopes was ranked for this query, "
                f"even {DEEP_LIMIT} deep: it shares no query term (and no vector ranked it), or it is not an "
                "active head of a Scope this prepare read"
            }
        )


def _below_floor(probe: probes.ExplainProbe) -> list[BelowFloorHit]:
    """Each dropped hit once per (round, channel), in the order the searches met them."""
    seen: set[tuple[int, str, ArtifactKey]] = set()
    found: list[BelowFloorHit] = []
    for drop in probe.dropped:
        identity = (drop.round, drop.below.channel, drop.below.key)
        if identity in seen:
            continue
        seen.add(identity)
        readings = [FloorReading(measure=r.measure, value=r.value, floor=r.floor) for r in drop.below.readings]
        found.append(
            BelowFloorHit(
                artifact_address=drop.below.key.to_address(),
                round=drop.round,
                channel=drop.below.channel,
                readings=readings,
            )
        )
    return found


def _with_lineage(store: object, candidates: list[ExplainedCandidate]) -> list[ExplainedCandidate]:
    """Each Atomic Memory candidate with the Sources its revision was written from (RFC 1435's third level: the
    Source evidence of an injected item, read under the same authorization as the candidate itself)."""
    keys = [
        ArtifactKey.from_address(c.artifact_address)
        for c in candidates
        if c.family == "atomic-memory" and c.artifact_address is not None
    ]
    found = lineage_of(store, keys)
    if not found:
        return candidates
    return [
        c.model_copy(update={"source_refs": found[ArtifactKey.from_address(c.artifact_address)]})
        if c.family == "atomic-memory"
        and c.artifact_address is not None
        and ArtifactKey.from_address(c.artifact_address) in found
        else c
        for c in candidates
    ]
