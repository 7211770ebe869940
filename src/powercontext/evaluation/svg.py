"""Inline SVG charts for ``report.html``: curves over k, and prepare latency on a logarithmic axis.

Plain strings, no script and nothing fetched; every label that comes from data is escaped by the caller's
``escape`` function (passed in so this module has one reason to change: drawing).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

COLORS = ("#3b6ea5", "#e0873a", "#5a9e5a", "#c44e52", "#8172b2", "#937860", "#da8bc3", "#8c8c8c")
DASHES = ("", "6 3", "2 3", "8 3 2 3")


def line_chart(
    title: str,
    xs: Sequence[float],
    series: Mapping[str, Sequence[float]],
    escape: Callable[[object], str],
    *,
    x_label: str = "k",
) -> str:
    """Lines from 0 to 1 over ``xs`` (one per series, each with its own colour and dash), gridlines at
    0.25 steps, a point and a value tooltip at every x."""
    left, top, width, height, bottom = 44, 14, 480, 200, 40
    names = list(series)
    total_h = top + height + bottom + 18 * len(names)
    parts = [f'<svg width="{left + width + 30}" height="{total_h}" role="img"><title>{escape(title)}</title>']
    x0, x1 = min(xs), max(xs)
    span = (x1 - x0) or 1.0

    def px(x: float) -> float:
        return left + (x - x0) / span * width

    def py(y: float) -> float:
        return top + (1.0 - max(0.0, min(1.0, y))) * height

    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = py(tick)
        parts.append(f'<line x1="{left}" x2="{left + width}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick:.2f}</text>')
    for x in xs:
        parts.append(f'<text x="{px(x):.1f}" y="{top + height + 16}" text-anchor="middle">{x:g}</text>')
    parts.append(
        f'<text x="{left + width / 2:.0f}" y="{top + height + 32}" text-anchor="middle">{escape(x_label)}</text>'
    )
    for j, name in enumerate(names):
        color, dash = COLORS[j % len(COLORS)], DASHES[j % len(DASHES)]
        points = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in zip(xs, series[name], strict=True))
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        parts.append(
            f'<polyline class="curve" data-series="{escape(name)}" points="{points}" fill="none" '
            f'stroke="{color}" stroke-width="2"{dash_attr}/>'
        )
        for x, y in zip(xs, series[name], strict=True):
            parts.append(
                f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{color}">'
                f"<title>{escape(name)} at {x:g}: {y:.3f}</title></circle>"
            )
        ly = top + height + bottom + 18 * j + 6
        parts.append(
            f'<line x1="{left}" x2="{left + 24}" y1="{ly}" y2="{ly}" stroke="{color}" stroke-width="2"{dash_attr}/>'
        )
        parts.append(f'<text x="{left + 30}" y="{ly + 4}">{escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _log_ticks(low: float, high: float) -> list[float]:
    """1-2-5 ticks per decade between ``low`` and ``high`` (both > 0)."""
    ticks = []
    for exponent in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for mantissa in (1, 2, 5):
            value = mantissa * 10.0**exponent
            if low <= value <= high:
                ticks.append(value)
    return ticks


def _ms(value: float) -> str:
    return f"{value:.0f} ms" if value >= 100 else f"{value:.1f} ms" if value >= 1 else f"{value:.2f} ms"


def latency_chart(title: str, values: Sequence[float], percentiles: Mapping[str, float]) -> str:
    """Counts of latencies in bins of equal width on a log10 axis, so one slow outlier does not squash the
    rest; each percentile is a vertical line whose label sits in its own row above the plot, never on a bar."""
    left, width, height, bottom = 40, 520, 150, 34
    label_rows = max(1, len(percentiles))
    top = 8 + 16 * label_rows
    parts = [f'<svg width="{left + width + 40}" height="{top + height + bottom}" role="img"><title>{title}</title>']
    positive = [v for v in values if v > 0]
    if not positive:
        parts.append(f'<text x="{left}" y="{top + 20}">no latencies</text></svg>')
        return "".join(parts)
    low, high = min(positive), max(positive)
    low, high = low / 1.05, high * 1.05  # room so the extremes are not on the frame
    log_low, log_span = math.log10(low), (math.log10(high) - math.log10(low)) or 1.0

    def px(v: float) -> float:
        return left + (math.log10(max(v, low)) - log_low) / log_span * width

    bins = min(40, max(8, len(positive) // 4))
    counts = [0] * bins
    for v in positive:
        counts[min(bins - 1, int((math.log10(v) - log_low) / log_span * bins))] += 1
    peak = max(counts)
    bin_w = width / bins
    for i, count in enumerate(counts):
        h = count / peak * height
        parts.append(
            f'<rect class="bin" x="{left + i * bin_w:.1f}" y="{top + height - h:.1f}" width="{max(bin_w - 1, 1):.1f}" '
            f'height="{h:.1f}" fill="{COLORS[0]}"><title>{count}</title></rect>'
        )
    for tick in _log_ticks(low, high):
        x = px(tick)
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top + height}" y2="{top + height + 4}" stroke="#666"/>')
        parts.append(f'<text x="{x:.1f}" y="{top + height + 16}" text-anchor="middle">{tick:g}</text>')
    parts.append(f'<text x="{left + width / 2:.0f}" y="{top + height + 30}" text-anchor="middle">ms (log scale)</text>')
    for row, (name, value) in enumerate(percentiles.items()):
        x = px(value)
        color = COLORS[3 + row % 3]
        label_y = 14 + 16 * row
        anchor = "end" if x > left + width * 0.7 else "start"
        shift = -4 if anchor == "end" else 4
        parts.append(
            f'<line class="percentile" x1="{x:.1f}" x2="{x:.1f}" y1="{label_y + 3}" y2="{top + height}" '
            f'stroke="{color}" stroke-dasharray="4 2"/>'
        )
        parts.append(
            f'<text class="percentile-label" x="{x + shift:.1f}" y="{label_y}" text-anchor="{anchor}" '
            f'fill="{color}">{name} {_ms(value)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
