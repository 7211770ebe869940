"""Ranking metrics over the injected items of one prepare (binary relevance, ranks from 1)."""

from __future__ import annotations

import math
from collections.abc import Sequence


def first_rank(selected: Sequence[str], wanted: Sequence[str]) -> int | None:
    """The 1-based position of the first ``wanted`` id in ``selected``, or None."""
    wanted_set = set(wanted)
    return next((i for i, item in enumerate(selected, start=1) if item in wanted_set), None)


def hit_at(selected: Sequence[str], expected: Sequence[str], k: int) -> bool:
    """At least one expected id among the first ``k`` injected items."""
    rank = first_rank(selected, expected)
    return rank is not None and rank <= k


def recall_at(selected: Sequence[str], expected: Sequence[str], k: int) -> float:
    """The share of the expected ids among the first ``k`` injected items (1.0 when nothing is expected)."""
    if not expected:
        return 1.0
    return len(set(selected[:k]) & set(expected)) / len(set(expected))


def reciprocal_rank(selected: Sequence[str], expected: Sequence[str]) -> float:
    rank = first_rank(selected, expected)
    return 0.0 if rank is None else 1.0 / rank


def ndcg_at(selected: Sequence[str], expected: Sequence[str], k: int) -> float:
    """Normalized DCG with gain 1 per expected id: DCG / the DCG of all expected ids ranked first."""
    wanted = set(expected)
    if not wanted:
        return 1.0
    dcg = sum(1.0 / math.log2(i + 1) for i, item in enumerate(selected[:k], start=1) if item in wanted)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(wanted), k) + 1))
    return dcg / ideal


def outdated_instead(selected: Sequence[str], expected: Sequence[str], outdated: Sequence[str]) -> bool:
    """An outdated memory was injected and no current one was."""
    return first_rank(selected, outdated) is not None and first_rank(selected, expected) is None


def outdated_over_current(selected: Sequence[str], expected: Sequence[str], outdated: Sequence[str]) -> bool:
    """An outdated memory was injected and the current one was not, or ranks below it."""
    stale = first_rank(selected, outdated)
    if stale is None:
        return False
    current = first_rank(selected, expected)
    return current is None or stale < current


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    index = max(0, math.ceil(q / 100.0 * len(ordered)) - 1)
    return ordered[index]
