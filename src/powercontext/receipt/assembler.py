"""Projects a RecallTrace and a PreparedContextBuild into a ``PreparedContextReceipt``.

The assembler reads only evidence already produced: it never searches, reads storage or calls a model.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Protocol, get_args

from powercontext.assembly.builder import PreparedContextBuild
from powercontext.contract.common import Family
from powercontext.contract.receipt import (
    OmissionReason,
    OmittedGroup,
    PreparedContextReceipt,
    RecallRound,
    RetrievalEvidence,
    SearchGroup,
    SelectedArtifact,
    StageTiming,
)
from powercontext.recall.trace import RecallTrace
from powercontext.text.normalize import query_digest, sha256_digest

_FAMILY_ORDER = {f: i for i, f in enumerate(get_args(Family))}
_REASON_ORDER = {r: i for i, r in enumerate(get_args(OmissionReason))}


@dataclass(frozen=True)
class ReceiptEvidence:
    receipt_id: str
    query: str
    requested_max_bytes: int
    trace: RecallTrace
    build: PreparedContextBuild


class ReceiptAssembler(Protocol):
    """The seam that turns evidence into a Receipt; the runtime validates whatever it returns."""

    def assemble(self, evidence: ReceiptEvidence) -> PreparedContextReceipt: ...


class TraceReceiptAssembler:
    """The default assembler."""

    def assemble(self, evidence: ReceiptEvidence) -> PreparedContextReceipt:
        build, trace = evidence.build, evidence.trace
        context = build.context
        return PreparedContextReceipt(
            receipt_id=evidence.receipt_id,
            query_digest=query_digest(evidence.query),
            content_digest=sha256_digest(context.content) if context.content is not None else None,
            requested_max_bytes=evidence.requested_max_bytes,
            used_bytes=context.content_bytes,
            truncated=any(item.truncated for item in build.items),
            non_deterministic=trace.non_deterministic,
            retrieval=RetrievalEvidence(
                rounds=[RecallRound(round=r.round, outcome=r.outcome, retained=r.retained) for r in trace.rounds],
                searches=search_groups(trace),
                rerank_configs=[],
                reranks=[],
            ),
            selected=[
                SelectedArtifact(
                    family=item.key.family,
                    artifact_address=item.key.to_address(),
                    rendered_bytes=item.rendered_bytes,
                    truncated=item.truncated,
                )
                for item in build.items
            ],
            omitted=omitted_groups(build, trace.requested_families),
            stages=stage_timings(trace),
        )


def search_groups(trace: RecallTrace) -> list[SearchGroup]:
    """Calls grouped by (round, family, mode, outcome, fallback_reason), in first-occurrence order.

    Calls happen in a deterministic order (round, then Scope order, then family), so first
    occurrence is a deterministic order too; it keeps the RFC's example order.
    """
    counts: Counter[tuple[int, str, str, str, str]] = Counter(
        (c.round, c.family, c.mode, c.outcome, c.fallback_reason) for c in trace.searches
    )
    return [
        SearchGroup(round=k[0], family=k[1], mode=k[2], outcome=k[3], fallback_reason=k[4], count=n)
        for k, n in counts.items()
    ]


def omitted_groups(build: PreparedContextBuild, requested: tuple[Family, ...]) -> list[OmittedGroup]:
    """Builder omission counters plus a ``not_retrieved`` flag per requested family with no candidates."""
    counts = dict(build.omissions)
    for family in requested:
        if build.candidate_counts.get(family, 0) == 0:
            counts[(family, "not_retrieved")] = 1
    ordered = sorted(counts.items(), key=lambda kv: (_FAMILY_ORDER[kv[0][0]], _REASON_ORDER[kv[0][1]]))
    return [OmittedGroup(family=f, reason=r, count=n) for (f, r), n in ordered if n > 0]


def stage_timings(trace: RecallTrace) -> list[StageTiming]:
    """Durations summed per stage name with the instance count, in first-run order."""
    totals: dict[str, list[float]] = {}
    for sample in trace.stages:
        entry = totals.setdefault(sample.stage, [0.0, 0])
        entry[0] += sample.duration_ms
        entry[1] += 1
    return [StageTiming(stage=s, duration_ms=round(d, 3), count=int(n)) for s, (d, n) in totals.items()]
