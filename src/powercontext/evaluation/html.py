"""``report.html``: one self-contained page (inline CSS and SVG, no script, nothing fetched).

Every string that comes from the suite or the Server is HTML-escaped, so a memory or query that looks
like markup is shown as text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from powercontext.evaluation.html_sections import baseline_section, worst_section
from powercontext.evaluation.join import MISS_REASONS
from powercontext.evaluation.svg import latency_chart, line_chart

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#222;max-width:1100px}
h1{font-size:1.4rem}h2{font-size:1.1rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}
th:first-child,td:first-child{text-align:left}code{font-size:12px}
.q{text-align:left;max-width:480px;white-space:pre-wrap}.muted{color:#666}
svg text{font:11px system-ui,sans-serif}
.worst ol,.worst ul{margin:.2rem 0;padding-left:1.2rem}.mem{color:#333}.miss{color:#8a1f1f}.miss .mem{color:#8a1f1f}
.up{background:#e6f4e6}.down{background:#fbe9e9}.warn{color:#8a1f1f}
"""
_COLORS = ("#3b6ea5", "#e0873a", "#5a9e5a", "#c44e52", "#8172b2", "#937860", "#da8bc3", "#8c8c8c")


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return _e(value)


def format_bytes(value: float) -> str:
    """``906 B``, ``2.8 KiB``, ``1.2 MiB``: a byte count as a person reads it."""
    if value < 1024:
        return f"{value:.0f} B"
    if value < 1024 * 1024:
        return f"{value / 1024:.1f} KiB"
    return f"{value / (1024 * 1024):.1f} MiB"


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
        ("mean injected", "mean_content_bytes"),
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
                cells.append(f"{group['latency_ms']['p50']:.1f}")
            elif (key in ranked and not group["scored"]) or (key in outdated and not group["with_outdated"]):
                cells.append("–")  # nothing to score: an abstain-only group, or no outdated ids
            elif key == "abstain_mean_bytes" and not group["abstain"]:
                cells.append("–")
            elif key in ("abstain_mean_bytes", "mean_content_bytes"):
                cells.append(format_bytes(group[key]))
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


def _curves(report: Mapping[str, Any]) -> str:
    curves = report["overall"].get("curves")
    if not curves or not report["overall"]["scored"]:
        return "<p class='muted'>no scored queries</p>"
    series = {"hit@k": curves["hit_at"], "recall@k": curves["recall_at"]}
    baseline = report.get("baseline")
    if baseline is not None and baseline.get("curves"):
        series["hit@k (baseline)"] = baseline["curves"]["hit_at"]
        series["recall@k (baseline)"] = baseline["curves"]["recall_at"]
    chart = line_chart("hit@k and recall@k for k = 1 … 16", curves["k"], series, _e)
    ks = [int(k) for k in curves["k"]]
    head = "".join(f"<th>{k}</th>" for k in ks)
    rows = "".join(
        f"<tr><td>{_e(name)}</td>" + "".join(f"<td>{v:.3f}</td>" for v in values) + "</tr>"
        for name, values in series.items()
    )
    return f"{chart}<table class='curves'><tr><th>k</th>{head}</tr>{rows}</table>"


def _baseline(report: Mapping[str, Any]) -> str:
    baseline = report.get("baseline")
    if baseline is None:
        return ""
    return (
        f"<h2>Against the baseline</h2><p class='muted'>baseline <code>{_e(baseline['path'])}</code> (suite "
        f"<code>{_e(baseline['comparison']['before']['suite'])}</code>); deltas are this run − baseline</p>"
        + baseline_section(baseline["comparison"], _e)
    )


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
    latency = report["overall"]["latency_ms"]
    percentiles = {"p50": latency["p50"], "p95": latency.get("p95", latency["p90"]), "p99": latency["p99"]}
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
        f"<h2>Recall and hit rate by cut-off k</h2>{_curves(report)}"
        f"{_baseline(report)}"
        f"<h2>Prepare latency</h2><p>p50 {latency['p50']:.1f} ms · p95 {percentiles['p95']:.1f} ms · p99 "
        f"{latency['p99']:.1f} ms · mean {latency['mean']:.1f} ms</p>"
        f"{latency_chart('prepare latency (ms, log scale)', latencies, percentiles)}"
        f"<h2>Worst queries</h2>{worst_section(report, _e)}"
        f"<h2>Settings</h2><table>{settings_rows}</table>"
        "</body></html>\n"
    )
