"""Checks a Receipt against the build it explains, and serializes it exactly as returned.

Checks run on the Receipt's wire data (the JSON object as a dict), so the same checks serve the
built-in assembler's plain data and an injected assembler's model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from powercontext.contract.receipt import (
    MAX_OMITTED_GROUPS,
    MAX_RECEIPT_BYTES,
    MAX_RERANK_CONFIGS,
    MAX_RERANK_GROUPS,
    MAX_ROUNDS,
    MAX_SEARCH_GROUPS,
    MAX_SELECTED,
    MAX_STAGES,
    PreparedContextReceipt,
)
from powercontext.inference.generation_config import SAFE_SETTINGS
from powercontext.recall.trace import RecallTrace
from powercontext.receipt.assembler import ReceiptEvidence, omission_counts, omission_order
from powercontext.receipt.digests import config_digest, wire_config
from powercontext.text.normalize import query_digest, sha256_digest

# Every stage name a Receipt may carry: the runtime stages that exist (rerank time is part of memory.search).
STAGE_NAMES = frozenset(
    {
        "scope.context",
        "memory.search",
        "topic_memory.search",
        "experience.search",
        "profile.read",
        "code.query",
        "recall.expand",
        "context.build",
    }
)

_RETRIEVAL_CAPS = {
    "rounds": MAX_ROUNDS,
    "searches": MAX_SEARCH_GROUPS,
    "rerank_configs": MAX_RERANK_CONFIGS,
    "reranks": MAX_RERANK_GROUPS,
}
_CAPS = {"selected": MAX_SELECTED, "omitted": MAX_OMITTED_GROUPS, "stages": MAX_STAGES}


class ReceiptRejected(Exception):
    """A Receipt that must not be returned. ``reason`` is a content-free code for the diagnostic."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def rejection_for(exc: ValidationError) -> ReceiptRejected:
    """The content-free reason for a schema failure (pydantic's message may quote values)."""
    kinds = {e["type"] for e in exc.errors()}
    return ReceiptRejected("count_overflow" if "too_long" in kinds else "schema_violation")


def model_wire_data(receipt: PreparedContextReceipt) -> dict[str, Any]:
    """An injected assembler's model as wire data, re-validated from JSON: models built with
    ``model_construct`` or ``model_copy(update=...)`` skipped validation."""
    try:
        checked = PreparedContextReceipt.model_validate_json(receipt.model_dump_json())
    except ValidationError as exc:
        raise rejection_for(exc) from None
    return checked.model_dump(mode="json")


def serialize_valid_receipt(data: Mapping[str, Any], evidence: ReceiptEvidence) -> bytes:
    """The Receipt's exact wire bytes, after checking it states exactly what ``evidence`` records; else
    ``ReceiptRejected`` with a content-free reason."""
    build, receipt_id = evidence.build, evidence.receipt_id
    if evidence.trace.evidence_gap is not None:
        raise ReceiptRejected(evidence.trace.evidence_gap)
    retrieval = data["retrieval"]
    if any(len(retrieval[k]) > cap for k, cap in _RETRIEVAL_CAPS.items()) or any(
        len(data[k]) > cap for k, cap in _CAPS.items()
    ):
        raise ReceiptRejected("count_overflow")
    if data["receipt_id"] != receipt_id:
        raise ReceiptRejected("receipt_id_mismatch")
    context = build.context
    if data["used_bytes"] != context.content_bytes:
        raise ReceiptRejected("used_bytes_mismatch")
    expected_digest = sha256_digest(context.content) if context.content is not None else None
    if data["content_digest"] != expected_digest:
        raise ReceiptRejected("content_digest_mismatch")
    expected: list[tuple[str, str, Any, int, bool]] = [
        (
            i.ref.family,
            "artifact_address",
            {
                "scope_id": i.ref.scope_id,
                "artifact": {"family": i.ref.family, "artifact_id": i.ref.artifact_id, "revision": i.ref.revision},
            },
            i.rendered_bytes,
            i.truncated,
        )
        for i in build.items
    ]
    expected += [
        ("code", "code_evidence", c.ref.model_dump(mode="json"), c.rendered_bytes, c.truncated)
        for c in build.code_items
    ]
    # Ordered, complete and unambiguous: origins then code origins, each item with exactly one identity field.
    selected = [_selected_identity(s) for s in data["selected"]]
    if selected != expected:
        raise ReceiptRejected("origin_mismatch")
    if data["truncated"] != build.truncated:
        raise ReceiptRejected("truncated_mismatch")
    if data["query_digest"] != query_digest(evidence.query):
        raise ReceiptRejected("query_digest_mismatch")
    if data["requested_max_bytes"] != evidence.requested_max_bytes:
        raise ReceiptRejected("requested_max_bytes_mismatch")
    _check_retrieval(data, evidence)
    check_against_trace(data, evidence.trace)
    _check_omitted(data, evidence)
    stages = [s["stage"] for s in data["stages"]]
    if len(set(stages)) != len(stages) or not set(stages) <= STAGE_NAMES:
        raise ReceiptRejected("stage_mismatch")
    if not _same(data["stages"], expected_stages(evidence.trace)):
        raise ReceiptRejected("stage_mismatch")
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(raw) > MAX_RECEIPT_BYTES:
        raise ReceiptRejected("byte_overflow")
    return raw


def _selected_identity(item: Mapping[str, Any]) -> tuple[str, str, Any, int, bool] | None:
    fields = [f for f in ("artifact_address", "code_evidence") if item.get(f) is not None]
    if len(fields) != 1:
        return None
    return (item.get("family"), fields[0], item[fields[0]], item.get("rendered_bytes"), item.get("truncated"))  # type: ignore[return-value]


def _unique_sorted(keys: list[tuple[Any, ...]], reason: str, *, ordered: bool = True) -> None:
    """Aggregated (no two groups with one key) and, when ``ordered``, sorted by that key."""
    if len(set(keys)) != len(keys) or (ordered and keys != sorted(keys)):
        raise ReceiptRejected(reason)


def _check_retrieval(data: Mapping[str, Any], evidence: ReceiptEvidence) -> None:
    retrieval = data["retrieval"]
    for r in retrieval["rounds"]:
        if r["outcome"] == "expansion_failed" and r["retained"]:
            raise ReceiptRejected("round_mismatch")
    if [r["round"] for r in retrieval["rounds"]] != sorted({r["round"] for r in retrieval["rounds"]}):
        raise ReceiptRejected("round_mismatch")
    searches = retrieval["searches"]
    _unique_sorted(
        [(g["round"], g["family"], g["mode"], g["outcome"], g["fallback_reason"]) for g in searches],
        "search_group_mismatch",
        ordered=False,  # first-occurrence order (deterministic); aggregation is what a reader relies on
    )
    for group in searches:
        if (group["mode"] == "none") != (group["outcome"] == "not_run"):
            raise ReceiptRejected("search_group_mismatch")
    configs = retrieval["rerank_configs"]
    ids = [c["config_id"] for c in configs]
    _unique_sorted([(i,) for i in ids], "rerank_config_mismatch")
    model_backed = False
    for config in configs:
        digest = config_digest(config)
        if config["config_id"] != digest or config["config_digest"] != digest:
            raise ReceiptRejected("config_digest_mismatch")
        settings = config["effective_settings"]
        if not all(_allowed_setting(name, value) for name, value in settings.items()):
            raise ReceiptRejected("unrepresentable_config")
        if config["model"] is not None:
            model_backed = True
            if not config["non_deterministic"]:
                raise ReceiptRejected("non_deterministic_mismatch")
        elif config["prompt"] is not None:
            raise ReceiptRejected("unrepresentable_config")
    if model_backed and not data["non_deterministic"]:
        raise ReceiptRejected("non_deterministic_mismatch")
    groups = retrieval["reranks"]
    _unique_sorted(
        [(g["round"], g["config_id"], g["outcome"], g["fallback_reason"]) for g in groups], "rerank_group_mismatch"
    )
    if {g["config_id"] for g in groups} != set(ids):  # each group resolves to one config, each config is used
        raise ReceiptRejected("rerank_group_mismatch")
    trace = evidence.trace
    if sum(g["count"] for g in groups) != len(trace.reranks) or data["non_deterministic"] != trace.non_deterministic:
        raise ReceiptRejected("rerank_group_mismatch")


def _allowed_setting(name: str, value: Any) -> bool:
    spec = SAFE_SETTINGS.get(name)
    if spec is None or isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if spec.kind is int and not isinstance(value, int):
        return False
    return bool(spec.low <= value <= spec.high)


def _check_omitted(data: Mapping[str, Any], evidence: ReceiptEvidence) -> None:
    """The omitted groups are exactly the Builder's counters, the pre-Builder exclusions and the flags, in the
    assembler's one order."""
    stated = [((g["family"], g["reason"]), g["count"]) for g in data["omitted"]]
    keys = [key for key, _ in stated]
    if len(set(keys)) != len(keys) or keys != sorted(keys, key=lambda key: omission_order(*key)):
        raise ReceiptRejected("omission_mismatch")
    if dict(stated) != omission_counts(evidence.build, evidence.trace):
        raise ReceiptRejected("omission_mismatch")


# -- what the trace recorded, field by field ------------------------------------------------------------------
#
# Written from the trace's records here, not by calling the assembler: whatever an assembler states must equal
# what the prepare recorded, so an assembler that drops, adds, splits or inflates anything is caught.


def _same(stated: Any, expected: Any) -> bool:
    """Equal as JSON, types included (``1`` is not ``1.0``, ``true`` is not ``1``), key order aside."""
    return json.dumps(stated, sort_keys=True) == json.dumps(expected, sort_keys=True)


def check_against_trace(data: Mapping[str, Any], trace: RecallTrace) -> None:
    """Rounds, search groups, rerank configs and rerank groups exactly as ``trace`` recorded them."""
    retrieval = data["retrieval"]
    rounds = [{"round": r.round, "outcome": r.outcome, "retained": r.retained} for r in trace.rounds]
    if not _same(retrieval["rounds"], rounds):
        raise ReceiptRejected("round_mismatch")
    searches: dict[tuple[Any, ...], int] = {}
    for call in trace.searches:
        key = (call.round, call.family, call.mode, call.outcome, call.fallback_reason)
        searches[key] = searches.get(key, 0) + 1
    # In the order the calls first happened (round, then Scope order, then family): deterministic.
    search_fields = ("round", "family", "mode", "outcome", "fallback_reason")
    expected_searches = [{**dict(zip(search_fields, key, strict=True)), "count": n} for key, n in searches.items()]
    if not _same(retrieval["searches"], expected_searches):
        raise ReceiptRejected("search_group_mismatch")
    configs: dict[str, dict[str, Any]] = {}
    groups: dict[tuple[int, str, str, str], int] = {}
    for rerank in trace.reranks:
        config = wire_config(rerank.config)
        configs.setdefault(config["config_id"], config)
        group = (rerank.round, config["config_id"], rerank.outcome, rerank.reason)
        groups[group] = groups.get(group, 0) + 1
    if not _same(retrieval["rerank_configs"], [configs[digest] for digest in sorted(configs)]):
        raise ReceiptRejected("rerank_config_mismatch")
    fields = ("round", "config_id", "outcome", "fallback_reason")
    expected_groups = [{**dict(zip(fields, key, strict=True)), "count": n} for key, n in sorted(groups.items())]
    if not _same(retrieval["reranks"], expected_groups):
        raise ReceiptRejected("rerank_group_mismatch")


def expected_stages(trace: RecallTrace) -> list[dict[str, Any]]:
    """Each stage that ran, in first-run order: its durations summed in the order they were recorded (then
    rounded to the microsecond) and its instance count."""
    totals: dict[str, tuple[float, int]] = {}
    for sample in trace.stages:
        duration, count = totals.get(sample.stage, (0.0, 0))
        totals[sample.stage] = (duration + sample.duration_ms, count + 1)
    return [{"stage": s, "duration_ms": round(d, 3), "count": n} for s, (d, n) in totals.items()]
