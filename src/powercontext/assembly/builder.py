"""The PreparedContext Builder: pure selection, budgeting and rendering. No I/O.

Every candidate it is given ends in exactly one place: selected, or one omission counter.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from powercontext.assembly.render import (
    ENVELOPE_BYTES,
    SEPARATOR_BYTES,
    render_context,
    render_item,
)
from powercontext.contract.common import CodeEvidenceRef, Family
from powercontext.contract.prepare import PreparedContext
from powercontext.contract.receipt import OmissionReason
from powercontext.domain.identity import ArtifactKey
from powercontext.text.utf8 import ELLIPSIS_BYTES, truncate_utf8, truncate_with_ellipsis

MIN_TRUNCATED_BYTES = 64
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Candidate:
    """One retrieved item, in rank order. ``key`` is None when the source had no usable identity."""

    key: ArtifactKey | None
    kind: str
    text: str


@dataclass(frozen=True)
class BuilderLimits:
    candidate_limits: Mapping[Family, int] = field(default_factory=lambda: {"atomic-memory": 16})
    # Per-family injection caps, for families that have one (the default path caps only the total).
    family_limits: Mapping[Family, int] = field(default_factory=dict)
    entry_limit: int = 8
    max_entry_bytes: int = 2000
    min_truncated_bytes: int = MIN_TRUNCATED_BYTES


@dataclass(frozen=True, slots=True)
class BuiltItem:
    key: ArtifactKey
    rendered_bytes: int
    truncated: bool


@dataclass(frozen=True)
class PreparedContextBuild:
    """The Builder's result: the injection value plus the exact record of how it was made."""

    context: PreparedContext
    items: tuple[BuiltItem, ...]
    code_origins: tuple[CodeEvidenceRef, ...]
    omissions: Mapping[tuple[Family, OmissionReason], int]
    candidate_counts: Mapping[Family, int]

    @property
    def origins(self) -> tuple[ArtifactKey, ...]:
        return tuple(item.key for item in self.items)

    @property
    def dropped_items(self) -> int:
        return sum(n for (_, r), n in self.omissions.items() if r in ("below_min_bytes", "no_fitting_truncation"))


class BuilderInvariantError(Exception):
    """The Builder produced something that breaks its own contract (a bug, never user input)."""


def round_robin(lists: Sequence[Sequence[T]]) -> list[T]:
    """Rank-major order: every list's first item, then every second, and so on; each list keeps its order."""
    order: list[T] = []
    depth = max((len(items) for items in lists), default=0)
    for rank in range(depth):
        order.extend(items[rank] for items in lists if rank < len(items))
    return order


def interleave(pools: Mapping[Family, Sequence[Candidate]]) -> list[tuple[Family, Candidate]]:
    """Candidates of all families in rank-major order, tagged with their family."""
    return round_robin([[(family, c) for c in pool] for family, pool in pools.items()])


class PreparedContextBuilder:
    def __init__(self, limits: BuilderLimits | None = None) -> None:
        self.limits = limits or BuilderLimits()

    def build(self, pools: Mapping[Family, Sequence[Candidate]], max_bytes: int) -> PreparedContextBuild:
        limits = self.limits
        omissions: Counter[tuple[Family, OmissionReason]] = Counter()
        admitted: dict[Family, list[Candidate]] = {}
        for family, pool in pools.items():
            cap = limits.candidate_limits.get(family, len(pool))
            admitted[family] = list(pool[:cap])
            if len(pool) > cap:
                omissions[(family, "family_limit")] += len(pool) - cap

        seen: set[ArtifactKey] = set()
        per_family: Counter[Family] = Counter()
        fragments: list[str] = []
        items: list[BuiltItem] = []
        used = ENVELOPE_BYTES
        for family, candidate in interleave(admitted):
            if candidate.key is None or not candidate.text.strip():
                omissions[(family, "blank")] += 1
                continue
            if candidate.key in seen:
                omissions[(family, "duplicate")] += 1
                continue
            seen.add(candidate.key)
            family_cap = limits.family_limits.get(family)
            if family_cap is not None and per_family[family] >= family_cap:
                omissions[(family, "family_limit")] += 1
                continue
            if len(items) >= limits.entry_limit:
                omissions[(family, "entry_limit")] += 1
                continue
            separator = SEPARATOR_BYTES if fragments else 0
            fitted = self._fit(candidate, candidate.key, max_bytes - used - separator)
            if isinstance(fitted, str):
                omissions[(family, fitted)] += 1
                continue
            fragment, size, truncated = fitted
            fragments.append(fragment)
            items.append(BuiltItem(candidate.key, size, truncated))
            per_family[family] += 1
            used += separator + size

        if items:
            content = render_context(fragments)
            size = len(content.encode("utf-8"))
            if size != used or size > max_bytes:
                raise BuilderInvariantError("rendered content does not match its byte accounting")
            context = PreparedContext(status="ready", content=content, content_bytes=size)
        else:
            context = PreparedContext.empty()
        return PreparedContextBuild(
            context=context,
            items=tuple(items),
            code_origins=(),
            omissions=dict(omissions),
            candidate_counts={family: len(pool) for family, pool in pools.items()},
        )

    def _fit(self, candidate: Candidate, key: ArtifactKey, available: int) -> tuple[str, int, bool] | OmissionReason:
        """The largest rendering that fits ``available`` bytes, or the reason none does."""
        limits = self.limits
        text = candidate.text
        source_bytes = len(text.encode("utf-8"))
        capped = source_bytes > limits.max_entry_bytes
        body = truncate_with_ellipsis(text, limits.max_entry_bytes) if capped else text
        whole = render_item(key, candidate.kind, body, capped)
        whole_bytes = len(whole.encode("utf-8"))
        if whole_bytes <= available:
            return whole, whole_bytes, capped
        if source_bytes < limits.min_truncated_bytes:
            return "below_min_bytes"
        # Binary search the longest prefix (in bytes of the source) whose rendering fits; rendered
        # size grows monotonically with the prefix, and the truncated content stays >= the minimum.
        best: tuple[str, int] | None = None
        lo, hi = 0, min(source_bytes - 1, limits.max_entry_bytes - ELLIPSIS_BYTES)
        while lo <= hi:
            mid = (lo + hi) // 2
            prefix = truncate_utf8(text, mid)
            content = prefix + "…"
            if len(content.encode("utf-8")) < limits.min_truncated_bytes:
                lo = mid + 1
                continue
            fragment = render_item(key, candidate.kind, content, True)
            size = len(fragment.encode("utf-8"))
            if size <= available:
                best = (fragment, size)
                lo = mid + 1
            else:
                hi = mid - 1
        if best is None:
            return "no_fitting_truncation"
        return best[0], best[1], True
