"""``report.json``: the settings, the suite digest, per-category and overall scores, the miss reasons, per query."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from statistics import fmean
from typing import Any

from powercontext.evaluation.join import MISS_REASONS, what_would_help
from powercontext.evaluation.metrics import hit_at, percentile, recall_at
from powercontext.evaluation.runner import RunOutput, RunSettings, gather_modes
from powercontext.evaluation.suite import ABSTAIN, Suite

REPORT_SCHEMA = "powercontext.eval-report.v1"
CURVE_KS = tuple(range(1, 17))  # the recall@k and hit@k curves: k = 1 … 16
WORST_QUERIES = 25
MAX_SHOWN_TEXT = 400  # characters of a memory's text shown beside a miss
ALL = "all"
RANKED_METRICS = ("hit_at_1", "hit_at_3", "hit_at_k", "recall_at_k", "all_at_k", "reciprocal_rank", "ndcg_at_k")


def _mean(values: Iterable[float | bool]) -> float:
    items = [float(v) for v in values]
    return round(fmean(items), 4) if items else 0.0


def aggregate(queries: list[dict[str, Any]]) -> dict[str, Any]:
    """Scores of a group of per-query records (abstain queries count only towards the abstain figures)."""
    ranked = [q for q in queries if "hit_at_k" in q]
    group: dict[str, Any] = {"queries": len(queries), "scored": len(ranked)}
    for name in RANKED_METRICS:
        group[name] = _mean(q[name] for q in ranked)
    group["mrr"] = group.pop("reciprocal_rank")
    with_outdated = [q for q in queries if "outdated_over_current" in q]
    group["with_outdated"] = len(with_outdated)
    group["outdated_injected"] = _mean(q["outdated_injected"] for q in with_outdated)
    group["outdated_instead"] = _mean(q["outdated_instead"] for q in with_outdated)
    group["outdated_over_current"] = _mean(q["outdated_over_current"] for q in with_outdated)
    abstain = [q for q in queries if q["category"] == ABSTAIN]
    group["abstain"] = len(abstain)
    group["abstain_mean_bytes"] = round(fmean(q["content_bytes"] for q in abstain), 1) if abstain else 0.0
    group["abstain_empty"] = _mean(q["content_bytes"] == 0 for q in abstain)
    group["mean_content_bytes"] = round(fmean(q["content_bytes"] for q in queries), 1) if queries else 0.0
    reasons = {r: 0 for r in MISS_REASONS}
    for q in queries:
        for miss in q["misses"]:
            reasons[miss["reason"]] += 1
    group["miss_reasons"] = reasons
    latencies = [q["latency_ms"] for q in queries]
    group["latency_ms"] = {
        "p50": round(percentile(latencies, 50), 2),
        "p90": round(percentile(latencies, 90), 2),
        "p95": round(percentile(latencies, 95), 2),
        "p99": round(percentile(latencies, 99), 2),
        "mean": round(fmean(latencies), 2) if latencies else 0.0,
    }
    group["curves"] = curves(ranked)
    return group


def curves(ranked: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Mean hit@k and recall@k of scored queries for every k in ``CURVE_KS``."""
    return {
        "k": [float(k) for k in CURVE_KS],
        "hit_at": [_mean(hit_at(q["selected"], q["expected"], k) for q in ranked) for k in CURVE_KS],
        "recall_at": [_mean(recall_at(q["selected"], q["expected"], k) for q in ranked) for k in CURVE_KS],
    }


def worst_queries(queries: Iterable[dict[str, Any]], limit: int = WORST_QUERIES) -> list[dict[str, Any]]:
    """The scored queries with the lowest reciprocal rank (then recall@k, then id)."""
    scored = [q for q in queries if "reciprocal_rank" in q]
    return sorted(scored, key=lambda q: (q["reciprocal_rank"], q["recall_at_k"], q["id"]))[:limit]


def shown_texts(suite: Suite, queries: list[dict[str, Any]]) -> dict[str, str]:
    """Texts of the memories the worst-queries table shows: each miss, and what was injected instead."""
    by_id = {m.id: m.text for m in suite.memories}
    wanted: dict[str, None] = {}
    for q in worst_queries(queries):
        for memory_id in (*(m["id"] for m in q["misses"]), *q["selected"]):
            wanted.setdefault(memory_id, None)
    return {
        memory_id: text if len(text) <= MAX_SHOWN_TEXT else text[: MAX_SHOWN_TEXT - 1] + "…"
        for memory_id in wanted
        if (text := by_id.get(memory_id)) is not None
    }


def build_report(
    suite: Suite,
    settings: RunSettings,
    output: RunOutput,
    *,
    target: Mapping[str, Any],
    environment: Mapping[str, str],
    started_at: str,
    duration_s: float,
) -> dict[str, Any]:
    queries = [r.to_json() for r in output.results]
    categories = {c: aggregate([q for q in queries if q["category"] == c]) for c in suite.categories}
    overall = aggregate(queries)
    modes = gather_modes(output.results)
    fallbacks: dict[str, int] = {}
    for q in queries:
        for group in q["receipt"]["searches"] if q["receipt"] else []:
            if group["fallback_reason"] != "none":
                key = f"{group['family']}:{group['fallback_reason']}"
                fallbacks[key] = fallbacks.get(key, 0) + group["count"]
    return {
        "schema": REPORT_SCHEMA,
        "started_at": started_at,
        "duration_s": round(duration_s, 2),
        "suite": {
            "name": suite.name,
            "digest": suite.digest,
            "memories": len(suite.memories),
            "queries": len(suite.queries),
            "scopes": list(suite.scope_ids),
        },
        "settings": {**settings.to_json(), "target": dict(target), "environment": dict(environment)},
        "server": output.capabilities,
        "ingest": {
            "memories": output.memories,
            "seconds": round(output.ingest_seconds, 3),
            "per_second": round(output.memories / output.ingest_seconds, 1) if output.ingest_seconds else None,
        },
        "search_modes": modes,
        "search_fallbacks": fallbacks,
        "join_exact": sum(1 for q in queries if q["join_exact"]),
        "overall": overall,
        "categories": categories,
        "what_would_help": what_would_help(overall["miss_reasons"], modes),
        "queries": queries,
        "texts": shown_texts(suite, queries),
    }


def write_json(report: Mapping[str, Any], path: Path) -> None:
    path.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def read_report(path: Path) -> dict[str, Any]:
    """A report.json; ``OSError`` or ``ValueError`` (naming ``path``) when it cannot be read or is not one."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not JSON ({exc.msg}, line {exc.lineno})") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not UTF-8 text") from None
    if not isinstance(value, dict) or value.get("schema") != REPORT_SCHEMA:
        raise ValueError(f"{path} is not a {REPORT_SCHEMA} report")
    return value
