"""How the ranked lists of a hybrid search become one: reciprocal-rank fusion and relative-score fusion."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def _record_key(hit: Any) -> Hashable:
    key: Hashable = hit.record.key
    return key


def fuse(
    channels: Sequence[tuple[Sequence[T], float]], k: int, limit: int, key_of: Callable[[T], Hashable] = _record_key
) -> list[T]:
    """Reciprocal-rank fusion of ranked lists (of frozen dataclasses with a ``score`` field); ties keep
    first-seen order (fts before vector). ``key_of`` says when two hits are the same item."""
    scores: dict[Hashable, float] = {}
    first: dict[Hashable, T] = {}
    for hits, weight in channels:
        for rank, hit in enumerate(hits, start=1):
            key = key_of(hit)
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
            first.setdefault(key, hit)
    ordered = sorted(scores, key=lambda key: -scores[key])[:limit]
    return [dataclasses.replace(first[key], score=scores[key]) for key in ordered]  # type: ignore[type-var]


ScoreRange = tuple[float, float]  # (lowest, highest) score of the list a channel read


def fuse_scores(
    channels: Sequence[tuple[Sequence[T], float]],
    limit: int,
    key_of: Callable[[T], Hashable] = _record_key,
    ranges: Sequence[ScoreRange | None] | None = None,
) -> list[T]:
    """Relative-score fusion of ranked lists (of frozen dataclasses with a higher-is-better ``score``).

    Each list's scores are mapped onto 0..1 by its own minimum and maximum (a list whose scores are all
    equal maps to 1), so a channel's confident top hit keeps its lead instead of being flattened to a rank;
    an item missing from a list gets 0 from it. The fused score is the weighted sum; ties keep first-seen
    order (fts before vector). ``ranges`` (one per channel, or None) gives the range to map from instead:
    that of the whole list the channel read, when a relevance floor has since dropped part of it.

    An identity a single list holds more than once (a store's own repeat, not two channels agreeing) scores
    once, and its repeats follow it in the answer, so the assembler still counts them as duplicates.
    """
    scores: dict[Hashable, float] = {}
    first: dict[Hashable, T] = {}
    repeats: dict[Hashable, int] = {}
    for index, (hits, weight) in enumerate(channels):
        if not hits:
            continue
        raw = [float(hit.score) for hit in hits]  # type: ignore[attr-defined]
        given = ranges[index] if ranges is not None else None
        low, high = given if given is not None else (min(raw), max(raw))
        span = high - low
        seen: dict[Hashable, int] = {}
        for hit, value in zip(hits, raw, strict=True):
            key = key_of(hit)
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > 1:
                continue
            normalised = (value - low) / span if span > 0 else 1.0
            scores[key] = scores.get(key, 0.0) + weight * normalised
            first.setdefault(key, hit)
        for key, count in seen.items():
            repeats[key] = max(repeats.get(key, 0), count - 1)
    ordered = sorted(scores, key=lambda key: -scores[key])[:limit]
    fused = [dataclasses.replace(first[key], score=scores[key]) for key in ordered]  # type: ignore[type-var]
    return [copy for hit, key in zip(fused, ordered, strict=True) for copy in [hit] * (1 + repeats[key])]
