"""The PreparedContext Builder: pure selection, budgeting and rendering. No I/O.

Every candidate it is given ends in exactly one place: selected, or one omission counter.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from powercontext.assembly.render import (
    ENVELOPE_BYTES,
    SEPARATOR_BYTES,
    DatePrecision,
    observed_label,
    render_code_item,
    render_context,
    render_item,
)
from powercontext.contract.common import CodeEvidenceRef, Family
from powercontext.contract.prepare import PreparedContext
from powercontext.contract.receipt import OmissionReason
from powercontext.domain.candidates import CANDIDATE_LIMITS, Candidate, CodeCandidate, round_robin
from powercontext.domain.identity import ArtifactKey
from powercontext.text.utf8 import ELLIPSIS_BYTES, truncate_utf8, truncate_with_ellipsis

MIN_TRUNCATED_BYTES = 64
CodeIdentity = tuple[str, str, int]  # fingerprint, path, start line: how code ranges are told apart
_Ref = TypeVar("_Ref", ArtifactKey, CodeEvidenceRef)


def _default_candidate_limits() -> dict[Family, int]:
    return dict(CANDIDATE_LIMITS)


@dataclass(frozen=True)
class BuilderLimits:
    # How many of each family's ranked candidates are considered at all (the rest: family_limit).
    candidate_limits: Mapping[Family, int] = field(default_factory=_default_candidate_limits)
    # Per-family injection caps on the default path (explicit sections bring their own).
    family_limits: Mapping[Family, int] = field(default_factory=lambda: {"experience": 2})
    entry_limit: int = 8
    code_limit: int = 4
    max_entry_bytes: int = 2000
    min_truncated_bytes: int = MIN_TRUNCATED_BYTES
    # How precisely each item shows when its statement was true (POWERCONTEXT_CONTEXT_DATES).
    dates: DatePrecision = "day"


@dataclass(frozen=True, slots=True)
class Section:
    """An explicit assembly section: visit this family, in this order, until ``limit`` items fit."""

    family: Family
    limit: int


@dataclass(frozen=True, slots=True)
class BuiltItem(Generic[_Ref]):
    """An item that went into the context: what it cites, its rendered size in bytes, and whether it was cut
    to fit. A code item cites the lines actually injected: a cut one has its final end_line and hash."""

    ref: _Ref
    rendered_bytes: int
    truncated: bool


@dataclass(frozen=True)
class PreparedContextBuild:
    """The Builder's result: the injection value plus the exact record of how it was made."""

    context: PreparedContext
    items: tuple[BuiltItem[ArtifactKey], ...]
    code_items: tuple[BuiltItem[CodeEvidenceRef], ...]
    omissions: Mapping[tuple[Family, OmissionReason], int]
    candidate_counts: Mapping[Family, int]

    @property
    def origins(self) -> tuple[ArtifactKey, ...]:
        return tuple(item.ref for item in self.items)

    @property
    def code_origins(self) -> tuple[CodeEvidenceRef, ...]:
        return tuple(item.ref for item in self.code_items)

    @property
    def truncated(self) -> bool:
        return any(i.truncated for i in self.items) or any(i.truncated for i in self.code_items)

    @property
    def dropped_items(self) -> int:
        return sum(n for (_, r), n in self.omissions.items() if r in ("below_min_bytes", "no_fitting_truncation"))


class FateRecorder(Protocol):
    """Told each candidate's outcome as the Builder decides it (the explain route's probe; None otherwise)."""

    def omitted(self, family: Family, key: ArtifactKey | None, reason: OmissionReason) -> None: ...
    def selected(
        self, family: Family, key: ArtifactKey, position: int, rendered_bytes: int, truncated: bool
    ) -> None: ...
    def code_omitted(self, identity: CodeIdentity, reason: OmissionReason) -> None: ...
    def code_selected(self, identity: CodeIdentity, position: int, rendered_bytes: int, truncated: bool) -> None: ...


class BuilderInvariantError(Exception):
    """The Builder produced something that breaks its own contract (a bug, never user input)."""


def interleave(pools: Mapping[Family, Sequence[Candidate]]) -> list[tuple[Family, Candidate]]:
    """Candidates of all families in rank-major order, tagged with their family."""
    return round_robin([[(family, c) for c in pool] for family, pool in pools.items()])


@dataclass
class _Selection:
    """The historical items selected so far, in order, and where every omission is counted (and reported)."""

    omissions: Counter[tuple[Family, OmissionReason]]
    fates: FateRecorder | None
    fragments: list[str] = field(default_factory=list)
    items: list[BuiltItem[ArtifactKey]] = field(default_factory=list)

    def omit(self, family: Family, key: ArtifactKey | None, reason: OmissionReason) -> None:
        self.omissions[(family, reason)] += 1
        if self.fates is not None:
            self.fates.omitted(family, key, reason)

    def add(self, family: Family, key: ArtifactKey, fragment: str, size: int, truncated: bool) -> None:
        self.fragments.append(fragment)
        self.items.append(BuiltItem(key, size, truncated))
        if self.fates is not None:
            self.fates.selected(family, key, len(self.items), size, truncated)


@dataclass(frozen=True)
class _VisitOrder:
    order: list[tuple[Family, Candidate]]
    caps: Mapping[Family, int]
    entry_limit: int


def _visit_order(
    admitted: Mapping[Family, Sequence[Candidate]], sections: Sequence[Section] | None, limits: BuilderLimits
) -> _VisitOrder:
    """The default recall interleaves families by rank under the default caps; explicit sections are visited
    in order, each under its own limit."""
    if sections is None:
        return _VisitOrder(interleave(admitted), limits.family_limits, limits.entry_limit)
    order = [(s.family, c) for s in sections for c in admitted.get(s.family, [])]
    return _VisitOrder(order, {s.family: s.limit for s in sections}, sum(s.limit for s in sections))


def _rendered(fragments: Sequence[str], used: int, max_bytes: int) -> PreparedContext:
    if not fragments:
        return PreparedContext.empty()
    content = render_context(list(fragments))
    size = len(content.encode("utf-8"))
    if size != used or size > max_bytes:
        raise BuilderInvariantError("rendered content does not match its byte accounting")
    return PreparedContext(status="ready", content=content, content_bytes=size)


class PreparedContextBuilder:
    def __init__(self, limits: BuilderLimits | None = None) -> None:
        self.limits = limits or BuilderLimits()

    def build(
        self,
        pools: Mapping[Family, Sequence[Candidate]],
        max_bytes: int,
        *,
        sections: Sequence[Section] | None = None,
        code: Sequence[CodeCandidate] = (),
        fates: FateRecorder | None = None,
    ) -> PreparedContextBuild:
        """Select, budget and render.

        Without ``sections`` (the default recall) the families interleave by rank under one combined
        entry limit; with them, each section is filled in order up to its own limit. Code is fitted
        first into its share of the budget (half when history is assembled too; unused bytes return
        to history) and rendered after the historical items.
        """
        omissions: Counter[tuple[Family, OmissionReason]] = Counter()
        selection = _Selection(omissions, fates)
        admitted = self._admit(pools, selection)
        used = ENVELOPE_BYTES
        historical = bool(pools) if sections is None else bool(sections)
        code_budget = max_bytes // 2 if historical else max_bytes
        code_fragments, code_items, used = self._fit_code(code, code_budget, used, omissions, fates)
        used = self._select(_visit_order(admitted, sections, self.limits), selection, max_bytes, used, code_fragments)
        fragments = selection.fragments + code_fragments
        counts: dict[Family, int] = {family: len(pool) for family, pool in pools.items()}
        if code:
            counts["code"] = len(code)
        return PreparedContextBuild(
            context=_rendered(fragments, used, max_bytes),
            items=tuple(selection.items),
            code_items=tuple(code_items),
            omissions=dict(omissions),
            candidate_counts=counts,
        )

    def _admit(
        self, pools: Mapping[Family, Sequence[Candidate]], selection: _Selection
    ) -> dict[Family, list[Candidate]]:
        """Each family's first ``candidate_limits`` candidates; the rest are omitted as ``family_limit``."""
        admitted: dict[Family, list[Candidate]] = {}
        for family, pool in pools.items():
            cap = self.limits.candidate_limits.get(family, len(pool))
            admitted[family] = list(pool[:cap])
            for beyond in pool[cap:]:
                selection.omit(family, beyond.key, "family_limit")
        return admitted

    def _select(
        self, visit: _VisitOrder, selection: _Selection, max_bytes: int, used: int, code_fragments: Sequence[str]
    ) -> int:
        """Select historical items in visiting order while they fit; returns the bytes used afterwards."""
        seen: set[ArtifactKey] = set()
        per_family: Counter[Family] = Counter()
        for family, candidate in visit.order:
            if candidate.key is None or not candidate.text.strip():
                selection.omit(family, candidate.key, "blank")
                continue
            if candidate.key in seen:
                selection.omit(family, candidate.key, "duplicate")
                continue
            seen.add(candidate.key)
            family_cap = visit.caps.get(family)
            if family_cap is not None and per_family[family] >= family_cap:
                selection.omit(family, candidate.key, "family_limit")
                continue
            if len(selection.items) >= visit.entry_limit:
                selection.omit(family, candidate.key, "entry_limit")
                continue
            separator = SEPARATOR_BYTES if selection.fragments or code_fragments else 0
            fitted = self._fit(candidate, candidate.key, max_bytes - used - separator)
            if isinstance(fitted, str):
                selection.omit(family, candidate.key, fitted)
                continue
            selection.add(family, candidate.key, *fitted)
            per_family[family] += 1
            used += separator + fitted[1]
        return used

    def _fit_code(
        self,
        code: Sequence[CodeCandidate],
        budget: int,
        used: int,
        omissions: Counter[tuple[Family, OmissionReason]],
        fates: FateRecorder | None = None,
    ) -> tuple[list[str], list[BuiltItem[CodeEvidenceRef]], int]:
        """Code items in rank order within ``budget`` (envelope included), cut only at line boundaries."""
        limits = self.limits

        def omit(candidate: CodeCandidate, reason: OmissionReason) -> None:
            omissions[("code", reason)] += 1
            if fates is not None:
                fates.code_omitted((candidate.fingerprint, candidate.path, candidate.start_line), reason)

        cap = limits.candidate_limits.get("code", len(code))
        for beyond in code[cap:]:
            omit(beyond, "family_limit")
        fragments: list[str] = []
        items: list[BuiltItem[CodeEvidenceRef]] = []
        seen: set[tuple[str, str, int]] = set()
        for candidate in code[:cap]:
            if not candidate.text.strip():
                omit(candidate, "blank")
                continue
            identity = (candidate.fingerprint, candidate.path, candidate.start_line)
            if identity in seen:
                omit(candidate, "duplicate")
                continue
            seen.add(identity)
            if len(items) >= limits.code_limit:
                omit(candidate, "family_limit")
                continue
            separator = SEPARATOR_BYTES if fragments else 0
            fitted = self._fit_lines(candidate, budget - used - separator)
            if isinstance(fitted, str):
                omit(candidate, fitted)
                continue
            fragment, item = fitted
            fragments.append(fragment)
            items.append(item)
            if fates is not None:
                fates.code_selected(identity, len(items), item.rendered_bytes, item.truncated)
            used += separator + item.rendered_bytes
        return fragments, items, used

    def _fit_lines(
        self, candidate: CodeCandidate, available: int
    ) -> tuple[str, BuiltItem[CodeEvidenceRef]] | OmissionReason:
        """The most leading whole lines (capped at ``max_entry_bytes``) whose rendering fits."""
        lines = candidate.text.splitlines(keepends=True)
        keep = len(lines)
        while keep > 0 and len("".join(lines[:keep]).encode("utf-8")) > self.limits.max_entry_bytes:
            keep -= 1
        while keep > 0:
            snippet = "".join(lines[:keep])
            ref = candidate.ref(candidate.start_line + keep - 1, snippet)
            fragment = render_code_item(ref, snippet, keep < len(lines))
            size = len(fragment.encode("utf-8"))
            if size <= available:
                return fragment, BuiltItem(ref, size, keep < len(lines))
            keep -= 1
        if len(candidate.text.encode("utf-8")) < self.limits.min_truncated_bytes:
            return "below_min_bytes"
        return "no_fitting_truncation"

    def _fit(self, candidate: Candidate, key: ArtifactKey, available: int) -> tuple[str, int, bool] | OmissionReason:
        """The largest rendering that fits ``available`` bytes, or the reason none does.

        The date goes only when the item fits with it: at the smallest budget the content matters more."""
        observed = observed_label(candidate.observed, self.limits.dates)
        fitted = self._fit_dated(candidate, key, available, observed)
        if fitted == "no_fitting_truncation" and observed is not None:
            return self._fit_dated(candidate, key, available, None)
        return fitted

    def _fit_dated(
        self, candidate: Candidate, key: ArtifactKey, available: int, observed: str | None
    ) -> tuple[str, int, bool] | OmissionReason:
        limits = self.limits
        text = candidate.text
        source_bytes = len(text.encode("utf-8"))
        capped = source_bytes > limits.max_entry_bytes
        body = truncate_with_ellipsis(text, limits.max_entry_bytes) if capped else text
        whole = render_item(key, candidate.kind, body, capped, observed)
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
            fragment = render_item(key, candidate.kind, content, True, observed)
            size = len(fragment.encode("utf-8"))
            if size <= available:
                best = (fragment, size)
                lo = mid + 1
            else:
                hi = mid - 1
        if best is None:
            return "no_fitting_truncation"
        return best[0], best[1], True
