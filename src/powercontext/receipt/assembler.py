"""Projects a RecallTrace and a PreparedContextBuild into a ``PreparedContextReceipt``.

The assembler reads only evidence already produced: it never searches, reads storage or calls a model.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol, get_args

from powercontext.assembly.builder import PreparedContextBuild
from powercontext.contract.common import RECEIPT_POLICY_ID, RECEIPT_SCHEMA, Family
from powercontext.contract.receipt import OmissionReason, PreparedContextReceipt
from powercontext.recall.trace import RecallTrace
from powercontext.receipt.digests import wire_config
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
    """The default assembler.

    On the hot path the runtime takes ``receipt_data`` (the wire object as plain data, checked by
    ``serialize_valid_receipt``) and never builds models; ``assemble`` is the validated model form.
    """

    def assemble(self, evidence: ReceiptEvidence) -> PreparedContextReceipt:
        return PreparedContextReceipt.model_validate(self.receipt_data(evidence))

    def receipt_data(self, evidence: ReceiptEvidence) -> dict[str, Any]:
        build, trace = evidence.build, evidence.trace
        context = build.context
        return {
            "schema": RECEIPT_SCHEMA,
            "receipt_id": evidence.receipt_id,
            "policy_id": RECEIPT_POLICY_ID,
            "query_digest": query_digest(evidence.query),
            "content_digest": sha256_digest(context.content) if context.content is not None else None,
            "requested_max_bytes": evidence.requested_max_bytes,
            "used_bytes": context.content_bytes,
            "truncated": build.truncated,
            "non_deterministic": trace.non_deterministic,
            "retrieval": {
                "rounds": [{"round": r.round, "outcome": r.outcome, "retained": r.retained} for r in trace.rounds],
                "searches": search_groups(trace),
                **rerank_evidence(trace),
            },
            "selected": [
                {
                    "family": item.ref.family,
                    "artifact_address": {
                        "scope_id": item.ref.scope_id,
                        "artifact": {
                            "family": item.ref.family,
                            "artifact_id": item.ref.artifact_id,
                            "revision": item.ref.revision,
                        },
                    },
                    "rendered_bytes": item.rendered_bytes,
                    "truncated": item.truncated,
                }
                for item in build.items
            ]
            + [
                {
                    "family": "code",
                    "code_evidence": item.ref.model_dump(mode="json"),
                    "rendered_bytes": item.rendered_bytes,
                    "truncated": item.truncated,
                }
                for item in build.code_items
            ],
            "omitted": omitted_groups(build, trace),
            "stages": stage_timings(trace),
        }


def search_groups(trace: RecallTrace) -> list[dict[str, object]]:
    """Calls grouped by (round, family, mode, outcome, fallback_reason), in first-occurrence order.

    Calls happen in a deterministic order (round, then Scope order, then family), so first
    occurrence is a deterministic order too; it keeps the RFC's example order.
    """
    counts: Counter[tuple[int, str, str, str, str]] = Counter(
        (c.round, c.family, c.mode, c.outcome, c.fallback_reason) for c in trace.searches
    )
    fields = ("round", "family", "mode", "outcome", "fallback_reason")
    return [{**dict(zip(fields, key, strict=True)), "count": n} for key, n in counts.items()]


def rerank_evidence(trace: RecallTrace) -> dict[str, list[dict[str, Any]]]:
    """``rerank_configs`` (one per distinct digest, sorted by it) and ``reranks`` (invocations grouped by
    (round, config_id, outcome, fallback_reason), sorted by that tuple)."""
    configs: dict[str, dict[str, Any]] = {}
    groups: Counter[tuple[int, str, str, str]] = Counter()
    for call in trace.reranks:
        config = wire_config(call.config)
        configs.setdefault(config["config_id"], config)
        groups[(call.round, config["config_id"], call.outcome, call.reason)] += 1
    fields = ("round", "config_id", "outcome", "fallback_reason")
    return {
        "rerank_configs": [configs[digest] for digest in sorted(configs)],
        "reranks": [{**dict(zip(fields, key, strict=True)), "count": n} for key, n in sorted(groups.items())],
    }


def omission_counts(build: PreparedContextBuild, trace: RecallTrace) -> dict[tuple[Family, OmissionReason], int]:
    """Exclusion events: the Builder's counters plus those counted before it (rerank, merging rounds), and a
    ``not_retrieved`` flag per requested family with no candidates."""
    counts: Counter[tuple[Family, OmissionReason]] = Counter(build.omissions)
    counts.update(trace.omissions)
    for family in trace.requested_families:
        if build.candidate_counts.get(family, 0) == 0:
            counts[(family, "not_retrieved")] = 1
    return {key: n for key, n in counts.items() if n > 0}


def omitted_groups(build: PreparedContextBuild, trace: RecallTrace) -> list[dict[str, object]]:
    """The omission counts as wire groups, in family then reason order."""
    counts = omission_counts(build, trace)
    ordered = sorted(counts.items(), key=lambda kv: omission_order(*kv[0]))
    return [{"family": f, "reason": r, "count": n} for (f, r), n in ordered]


def omission_order(family: str, reason: str) -> tuple[int, int]:
    """Where an omitted group stands: by family, then by reason, each in its enum's order."""
    return (_FAMILY_ORDER[family], _REASON_ORDER[reason])


def stage_timings(trace: RecallTrace) -> list[dict[str, object]]:
    """Durations summed per stage name with the instance count, in first-run order."""
    totals: dict[str, list[float]] = {}
    for sample in trace.stages:
        entry = totals.setdefault(sample.stage, [0.0, 0])
        entry[0] += sample.duration_ms
        entry[1] += 1
    return [{"stage": s, "duration_ms": round(d, 3), "count": int(n)} for s, (d, n) in totals.items()]
