"""``eval compare``: per-category differences between two reports and the queries whose hit flipped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

COMPARED = (
    "hit_at_1",
    "hit_at_k",
    "recall_at_k",
    "mrr",
    "ndcg_at_k",
    "outdated_instead",
    "outdated_over_current",
    "abstain_mean_bytes",
)


def compare_reports(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """Differences ``after - before`` per category and overall; flips of ``hit_at_k`` per query."""
    warnings = []
    if before["suite"]["digest"] != after["suite"]["digest"]:
        warnings.append("the reports are of different suites (digests differ): per-query flips are by id only")
    groups: dict[str, Any] = {}
    names = list(dict.fromkeys([*before["categories"], *after["categories"]]))
    for name in [*names, "all"]:
        a = before["overall"] if name == "all" else before["categories"].get(name)
        b = after["overall"] if name == "all" else after["categories"].get(name)
        if a is None or b is None:
            continue
        groups[name] = {
            metric: {"before": a[metric], "after": b[metric], "delta": round(b[metric] - a[metric], 4)}
            for metric in COMPARED
        }
        groups[name]["miss_reasons"] = {
            reason: {"before": a["miss_reasons"].get(reason, 0), "after": count}
            for reason, count in b["miss_reasons"].items()
            if count or a["miss_reasons"].get(reason, 0)
        }
        groups[name]["latency_p50_ms"] = {
            "before": a["latency_ms"]["p50"],
            "after": b["latency_ms"]["p50"],
            "delta": round(b["latency_ms"]["p50"] - a["latency_ms"]["p50"], 2),
        }
    old = {q["id"]: q for q in before["queries"]}
    gained: list[dict[str, Any]] = []
    lost: list[dict[str, Any]] = []
    abstain_changed: list[dict[str, Any]] = []
    for q in after["queries"]:
        p = old.get(q["id"])
        if p is None:
            continue
        if "hit_at_k" in q and "hit_at_k" in p and q["hit_at_k"] != p["hit_at_k"]:
            entry = {
                "id": q["id"],
                "category": q["category"],
                "reciprocal_rank": [p["reciprocal_rank"], q["reciprocal_rank"]],
                "misses_before": p["misses"],
                "misses_after": q["misses"],
            }
            (gained if q["hit_at_k"] else lost).append(entry)
        elif q["category"] == "abstain" and (p["content_bytes"] == 0) != (q["content_bytes"] == 0):
            abstain_changed.append({"id": q["id"], "content_bytes": [p["content_bytes"], q["content_bytes"]]})
    return {
        "before": {"suite": before["suite"]["digest"], "settings": before["settings"]},
        "after": {"suite": after["suite"]["digest"], "settings": after["settings"]},
        "warnings": warnings,
        "categories": groups,
        "flipped": {"gained": gained, "lost": lost, "abstain": abstain_changed},
    }


def format_comparison(comparison: Mapping[str, Any]) -> str:
    """A plain-text table for the terminal."""
    lines = [f"warning: {w}" for w in comparison["warnings"]]
    header = f"{'category':<14}" + "".join(f"{m:>24}" for m in ("hit@k", "MRR", "recall@k", "outdated instead"))
    lines.append(header)
    for name, group in comparison["categories"].items():
        cells = ""
        for metric in ("hit_at_k", "mrr", "recall_at_k", "outdated_instead"):
            g = group[metric]
            cells += f"{g['before']:>9.3f} → {g['after']:.3f} {g['delta']:+.3f}".rjust(24)
        lines.append(f"{name:<14}{cells}")
    flipped = comparison["flipped"]
    lines.append(f"gained hit@k: {len(flipped['gained'])}  lost hit@k: {len(flipped['lost'])}")
    for kind in ("gained", "lost"):
        for q in flipped[kind]:
            rr = q["reciprocal_rank"]
            lines.append(f"  {kind:<6} {q['id']} ({q['category']}) RR {rr[0]:.3f} → {rr[1]:.3f}")
    for q in flipped["abstain"]:
        lines.append(f"  abstain {q['id']} bytes {q['content_bytes'][0]} → {q['content_bytes'][1]}")
    return "\n".join(lines)
