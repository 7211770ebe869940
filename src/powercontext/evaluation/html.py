"""``report.html``: one self-contained page (inline CSS and SVG, no script, nothing fetched).

Every string that comes from the suite or the Server is HTML-escaped, so a memory or query that looks
like markup is shown as text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from powercontext.evaluation.join import MISS_REASONS

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#222;max-width:1100px}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}
th:first-child,td:first-child{text-align:left}code{font-size:12px}
.q{text-align:left;max-width:480px;white-space:pre-wrap}.muted{color:#666}
svg text{font:11px system-ui,sans-serif}
"""
_COLORS = ("#3b6ea5", "#e0873a", "#5a9e5a", "#c44e52", "#8172b2", "#937860", "#da8bc3", "#8c8c8c")


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return _e(value)


def bar_chart(title: str, labels: Sequence[str], series: Mapping[str, Sequence[float]], maximum: float = 1.0) -> str:
    """Grouped horizontal bars, one group per label, one bar per series (values from 0 to ``maximum``)."""
    names = list(series)
    bar_h, gap, left, width = 12, 10, 140, 420
    group_h = bar_h * len(names) + gap
    height = 30 + group_h * len(labels) + 20 * len(names)
    parts = [f'<svg width="{left + width + 80}" height="{height}" role="img">']
    parts.append(f"<title>{_e(title)}</title>")
    for i, label in enumerate(labels):
        y0 = 20 + i * group_h
        parts.append(f'<text x="{left - 6}" y="{y0 + bar_h}" text-anchor="end">{_e(label)}</text>')
        for j, name in enumerate(names):
            value = series[name][i]
            w = 0.0 if maximum <= 0 else max(0.0, min(1.0, value / maximum)) * width
            y = y0 + j * bar_h
            color = _COLORS[j % len(_COLORS)]
            parts.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" fill="{color}"/>')
            label_text = f"{value:.0f}" if maximum > 1.0 else f"{value:.3f}"
            parts.append(f'<text x="{left + w + 4:.1f}" y="{y + bar_h - 3}">{label_text}</text>')
    legend_y = 30 + group_h * len(labels)
    for j, name in enumerate(names):
        y = legend_y + j * 18
        parts.append(f'<rect x="{left}" y="{y - 10}" width="10" height="10" fill="{_COLORS[j % len(_COLORS)]}"/>')
        parts.append(f'<text x="{left + 16}" y="{y}">{_e(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def histogram(title: str, values: Sequence[float], bins: int = 20) -> str:
    """Latency distribution: counts per equal-width bin, with the p50 marked."""
    width, height, left, bottom = 520, 160, 40, 30
    parts = [f'<svg width="{width + left + 20}" height="{height + bottom + 10}" role="img"><title>{_e(title)}</title>']
    if values:
        low, high = min(values), max(values)
        span = (high - low) or 1.0
        counts = [0] * bins
        for v in values:
            counts[min(bins - 1, int((v - low) / span * bins))] += 1
        top = max(counts)
        bw = width / bins
        for i, c in enumerate(counts):
            h = c / top * height
            parts.append(
                f'<rect x="{left + i * bw:.1f}" y="{10 + height - h:.1f}" width="{bw - 1:.1f}" height="{h:.1f}" '
                f'fill="{_COLORS[0]}"><title>{c}</title></rect>'
            )
        median = sorted(values)[(len(values) - 1) // 2]
        mx = left + (median - low) / span * width
        parts.append(f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="10" y2="{10 + height}" stroke="{_COLORS[3]}"/>')
        parts.append(f'<text x="{mx + 3:.1f}" y="20">p50 {median:.1f} ms</text>')
        parts.append(f'<text x="{left}" y="{height + bottom}">{low:.1f} ms</text>')
        parts.append(f'<text x="{left + width}" y="{height + bottom}" text-anchor="end">{high:.1f} ms</text>')
    parts.append("</svg>")
    return "".join(parts)


def _category_table(report: Mapping[str, Any]) -> str:
    columns = (
        ("queries", "queries"),
        ("hit@1", "hit_at_1"),
        ("hit@k", "hit_at_k"),
        ("recall@k", "recall_at_k"),
        ("all@k", "all_at_k"),
        ("MRR", "mrr"),
        ("nDCG@k", "ndcg_at_k"),
        ("outdated instead", "outdated_instead"),
        ("outdated above current", "outdated_over_current"),
        ("abstain bytes", "abstain_mean_bytes"),
        ("p50 ms", None),
    )
    rows = ["<table><tr><th>category</th>" + "".join(f"<th>{_e(c)}</th>" for c, _ in columns) + "</tr>"]
    groups = [*report["categories"].items(), ("all", report["overall"])]
    ranked = {"hit_at_1", "hit_at_k", "recall_at_k", "all_at_k", "mrr", "ndcg_at_k"}
    outdated = {"outdated_instead", "outdated_over_current"}
    for name, group in groups:
        cells = []
        for _, key in columns:
            if key is None:
                cells.append(_fmt(group["latency_ms"]["p50"]))
            elif (key in ranked and not group["scored"]) or (key in outdated and not group["with_outdated"]):
                cells.append("–")  # nothing to score: an abstain-only group, or no outdated ids
            elif key == "abstain_mean_bytes" and not group["abstain"]:
                cells.append("–")
            else:
                cells.append(_fmt(group[key]))
        rows.append(f"<tr><td>{_e(name)}</td>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    rows.append("</table>")
    return "".join(rows)


def _reason_table(report: Mapping[str, Any]) -> str:
    rows = ["<table><tr><th>category</th>" + "".join(f"<th>{_e(r)}</th>" for r in MISS_REASONS) + "</tr>"]
    for name, group in [*report["categories"].items(), ("all", report["overall"])]:
        cells = "".join(f"<td>{group['miss_reasons'].get(r, 0)}</td>" for r in MISS_REASONS)
        rows.append(f"<tr><td>{_e(name)}</td>{cells}</tr>")
    rows.append("</table>")
    return "".join(rows)


def _help_table(report: Mapping[str, Any]) -> str:
    rows = ["<table><tr><th>change</th><th>misses it addresses</th><th>why</th></tr>"]
    for name, item in report["what_would_help"].items():
        rows.append(f'<tr><td>{_e(name)}</td><td>{_e(item["misses"])}</td><td class="q">{_e(item["why"])}</td></tr>')
    rows.append("</table>")
    return "".join(rows)


def _worst(report: Mapping[str, Any], limit: int = 25) -> str:
    scored = [q for q in report["queries"] if "reciprocal_rank" in q]
    worst = sorted(scored, key=lambda q: (q["reciprocal_rank"], q["recall_at_k"], q["id"]))[:limit]
    rows = [
        "<table><tr><th>query</th><th>category</th><th>RR</th><th>text</th><th>misses (reason, pool rank, "
        "deep rank)</th><th>search</th></tr>"
    ]
    for q in worst:
        misses = "; ".join(
            f"{m['id']}: {m['reason']} (pool {m['pool_rank'] or '–'}, deep {m['deep_rank'] or '–'})"
            for m in q["misses"]
        )
        searches = ""
        if q["receipt"] is not None:
            searches = ", ".join(
                f"r{s['round']} {s['family']} {s['mode']}"
                + ("" if s["fallback_reason"] == "none" else f" ({s['fallback_reason']})")
                for s in q["receipt"]["searches"]
            )
        rows.append(
            f"<tr><td>{_e(q['id'])}</td><td>{_e(q['category'])}</td><td>{q['reciprocal_rank']:.3f}</td>"
            f'<td class="q">{_e(q["query"])}</td><td class="q">{_e(misses)}</td><td class="q">{_e(searches)}</td></tr>'
        )
    rows.append("</table>")
    return "".join(rows)


def render_html(report: Mapping[str, Any]) -> str:
    """The whole report page as one string."""
    suite, settings = report["suite"], report["settings"]
    labels = list(report["categories"])
    scored = [c for c in labels if report["categories"][c]["scored"]]
    bars = bar_chart(
        "hit@k and MRR per category",
        [*scored, "all"],
        {
            "hit@k": [*(report["categories"][c]["hit_at_k"] for c in scored), report["overall"]["hit_at_k"]],
            "MRR": [*(report["categories"][c]["mrr"] for c in scored), report["overall"]["mrr"]],
        },
    )
    reasons = report["overall"]["miss_reasons"]
    reason_labels = [r for r in MISS_REASONS if reasons.get(r)]
    reason_chart = bar_chart(
        "misses by reason",
        reason_labels or ["none"],
        {"misses": [float(reasons[r]) for r in reason_labels] or [0.0]},
        maximum=float(max([reasons[r] for r in reason_labels], default=1)),
    )
    latencies = [q["latency_ms"] for q in report["queries"]]
    settings_rows = "".join(
        f"<tr><td>{_e(k)}</td><td class='q'>{_e(v)}</td></tr>"
        for k, v in {
            **{k: v for k, v in settings.items() if k not in ("environment", "target")},
            **{k: " ".join(v) if k == "command" else v for k, v in settings["target"].items()},
            **settings["environment"],
            "search modes that ran": report["search_modes"],
            "search fallbacks": report.get("search_fallbacks") or "none",
            "embedding model": report["server"].get("embedding_model"),
            "server version": report["server"].get("version"),
        }.items()
    )
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>PowerContext evaluation: {_e(suite['name'])}</title><style>{_CSS}</style></head><body>"
        f"<h1>PowerContext evaluation: {_e(suite['name'])}</h1>"
        f"<p class='muted'>suite digest <code>{_e(suite['digest'])}</code> · {suite['memories']} memories · "
        f"{suite['queries']} queries · started {_e(report['started_at'])} · {report['duration_s']} s · "
        f"ingest {_e(report['ingest']['per_second'])} memories/s · join exact for {report['join_exact']} of "
        f"{suite['queries']} queries</p>"
        f"<h2>Per category</h2>{_category_table(report)}{bars}"
        f"<h2>Why expected memories were not injected</h2>{_reason_table(report)}{reason_chart}"
        f"<h2>What would help</h2>{_help_table(report)}"
        f"<h2>Prepare latency</h2>{histogram('prepare latency (ms)', latencies)}"
        f"<h2>Worst queries</h2>{_worst(report)}"
        f"<h2>Settings</h2><table>{settings_rows}</table>"
        "</body></html>\n"
    )
