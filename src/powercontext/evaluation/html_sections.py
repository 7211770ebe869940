"""Two sections of ``report.html``: the worst queries with the texts of what was missed and what was
injected instead, and the comparison with a baseline run (``eval run --baseline``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from powercontext.evaluation.report import worst_queries

Escape = Callable[[object], str]
SHOWN_INJECTED = 5  # injected items listed above a miss; the rest are counted


def _memory(memory_id: str, texts: Mapping[str, str], e: Escape) -> str:
    text = texts.get(memory_id)
    shown = f"<span class='mem'>{e(text)}</span>" if text is not None else "<span class='muted'>(not in suite)</span>"
    return f"<code>{e(memory_id)}</code> {shown}"


def _miss_cell(q: Mapping[str, Any], texts: Mapping[str, str], e: Escape) -> str:
    """Each missed memory with its reason and ranks, under the list of what was injected above it."""
    selected: list[str] = q["selected"]
    injected = "".join(f"<li>{_memory(m, texts, e)}</li>" for m in selected[:SHOWN_INJECTED])
    more = len(selected) - SHOWN_INJECTED
    if more > 0:
        injected += f"<li class='muted'>… and {more} more</li>"
    if q["other_selected"]:
        injected += f"<li class='muted'>{q['other_selected']} item(s) of other families</li>"
    injected_block = (
        f"<div class='injected'><b>injected</b><ol>{injected}</ol></div>"
        if injected
        else "<div class='injected muted'>nothing injected</div>"
    )
    misses = "".join(
        f"<li class='miss'><b>{e(m['reason'])}</b> (pool {m['pool_rank'] or '–'}, deep {m['deep_rank'] or '–'}) "
        f"{_memory(m['id'], texts, e)}</li>"
        for m in q["misses"]
    )
    return injected_block + (f"<div><b>missed</b><ul>{misses}</ul></div>" if misses else "")


def worst_section(report: Mapping[str, Any], e: Escape) -> str:
    """The worst queries: id, category, RR, query text, what was injected and each miss with its text."""
    texts: Mapping[str, str] = report.get("texts", {})
    rows = ["<table class='worst'><tr><th>query</th><th>category</th><th>RR</th><th>text</th><th>injected, then "
            "missed (reason, pool rank, deep rank)</th><th>search</th></tr>"]  # fmt: skip
    for q in worst_queries(report["queries"]):
        searches = ""
        if q["receipt"] is not None:
            searches = ", ".join(
                f"r{s['round']} {s['family']} {s['mode']}"
                + ("" if s["fallback_reason"] == "none" else f" ({s['fallback_reason']})")
                for s in q["receipt"]["searches"]
            )
        rows.append(
            f"<tr data-query='{e(q['id'])}'><td>{e(q['id'])}</td><td>{e(q['category'])}</td>"
            f"<td>{q['reciprocal_rank']:.3f}</td><td class='q'>{e(q['query'])}</td>"
            f"<td class='q'>{_miss_cell(q, texts, e)}</td><td class='q'>{e(searches)}</td></tr>"
        )
    rows.append("</table>")
    return "".join(rows)


def _signed(value: float, digits: int = 3) -> str:
    return f"{value:+.{digits}f}"


def baseline_section(comparison: Mapping[str, Any], e: Escape) -> str:
    """Per-category deltas (this run − baseline) and the queries whose hit@k flipped."""
    metrics = (("hit@k", "hit_at_k"), ("recall@k", "recall_at_k"), ("MRR", "mrr"), ("nDCG@k", "ndcg_at_k"),
               ("outdated instead", "outdated_instead"))  # fmt: skip
    parts = [f"<p class='warn'>{e(w)}</p>" for w in comparison["warnings"]]
    head = "".join(f"<th>{e(label)}</th>" for label, _ in metrics)
    rows = [f"<table class='baseline'><tr><th>category</th>{head}<th>p50 ms</th></tr>"]
    for name, group in comparison["categories"].items():
        cells = ""
        for _, key in metrics:
            g = group[key]
            tone = "up" if g["delta"] > 0 else "down" if g["delta"] < 0 else "same"
            if key == "outdated_instead":  # fewer is better
                tone = {"up": "down", "down": "up"}.get(tone, tone)
            cells += f"<td class='{tone}'>{g['before']:.3f} → {g['after']:.3f} <b>{_signed(g['delta'])}</b></td>"
        lat = group["latency_p50_ms"]
        cells += f"<td>{lat['before']:.1f} → {lat['after']:.1f} <b>{_signed(lat['delta'], 1)}</b></td>"
        rows.append(f"<tr><td>{e(name)}</td>{cells}</tr>")
    rows.append("</table>")
    parts.append("".join(rows))
    flipped = comparison["flipped"]
    items = []
    for kind, label in (("gained", "now hit"), ("lost", "now missed")):
        for q in flipped[kind]:
            rr = q["reciprocal_rank"]
            reasons = ", ".join(m["reason"] for m in q["misses_after"]) or "–"
            items.append(
                f"<tr class='{kind}'><td>{e(label)}</td><td>{e(q['id'])}</td><td>{e(q['category'])}</td>"
                f"<td>{rr[0]:.3f} → {rr[1]:.3f}</td><td>{e(reasons)}</td></tr>"
            )
    for q in flipped["abstain"]:
        before, after = q["content_bytes"]
        items.append(
            f"<tr class='abstain'><td>abstain changed</td><td>{e(q['id'])}</td><td>abstain</td>"
            f"<td>{before} → {after} bytes</td><td></td></tr>"
        )
    parts.append(
        f"<p>{len(flipped['gained'])} queries gained hit@k, {len(flipped['lost'])} lost it.</p>"
        + (
            "<table class='flipped'><tr><th>change</th><th>query</th><th>category</th><th>RR</th>"
            f"<th>misses now</th></tr>{''.join(items)}</table>"
            if items
            else ""
        )
    )
    return "".join(parts)
