"""``ExplainProbe``: what one prepare did to each candidate, recorded only when an explain asks for it.

A prepare carries a probe only on the diagnostic explain route; on the host path it is ``None`` and every
recording site is one ``is not None`` test. The probe holds what the running code already computed (each
channel's ranked list with its scores, the exclusions before the Builder, the Builder's per-candidate
decision), so an explanation reports the run itself instead of searching again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from powercontext.contract.common import Family
from powercontext.contract.receipt import OmissionReason
from powercontext.domain.candidates import Candidate
from powercontext.domain.identity import ArtifactKey
from powercontext.search.relevance import BelowFloor

Channel = Literal["fts", "vector", "fused"]
CodeIdentity = tuple[str, str, int]  # fingerprint, path, start line: how the Builder tells code ranges apart


class _Hit(Protocol):
    @property
    def score(self) -> float: ...


class _KeyedHit(_Hit, Protocol):
    @property
    def record(self) -> _Keyed: ...


class _Keyed(Protocol):
    @property
    def key(self) -> ArtifactKey: ...


@dataclass(frozen=True, slots=True)
class ChannelList:
    """One channel's ranked list for one search (rank = index + 1)."""

    round: int
    family: Family
    scope_id: str
    channel: Channel
    hits: tuple[tuple[ArtifactKey, float], ...]


@dataclass(frozen=True, slots=True)
class CodeList:
    """The code search's ranked list of one channel (rank = index + 1); ``fused`` is its answer in final order."""

    channel: Channel
    hits: tuple[tuple[CodeIdentity, float], ...]


@dataclass(frozen=True, slots=True)
class FloorDrop:
    """A hit one search's relevance floor dropped before any pool was cut (never a candidate)."""

    round: int
    family: Family
    scope_id: str
    below: BelowFloor


@dataclass(frozen=True, slots=True)
class Fate:
    """Where a candidate ended: ``position`` (1-based injection order) when selected, else ``reason``."""

    family: Family
    position: int | None = None
    rendered_bytes: int | None = None
    truncated: bool = False
    reason: OmissionReason | None = None


class ChannelRecorder:
    """A probe bound to one search (round, family, Scope): what ``ChannelSearch`` calls for each list."""

    __slots__ = ("_family", "_probe", "_round", "_scope_id")

    def __init__(self, probe: ExplainProbe, round: int, family: Family, scope_id: str) -> None:
        self._probe, self._round, self._family, self._scope_id = probe, round, family, scope_id

    def record(self, channel: Channel, hits: Sequence[_KeyedHit]) -> None:
        ranked = tuple((hit.record.key, float(hit.score)) for hit in hits)
        self._probe.lists.append(ChannelList(self._round, self._family, self._scope_id, channel, ranked))

    def below_floor(self, dropped: Sequence[BelowFloor]) -> None:
        """Hits a channel's relevance floor dropped (search/relevance.py), with their measures."""
        self._probe.dropped.extend(FloorDrop(self._round, self._family, self._scope_id, d) for d in dropped)


@dataclass
class ExplainProbe:
    """Per-candidate evidence of one prepare; request-local, never logged, never part of a Receipt."""

    lists: list[ChannelList] = field(default_factory=list)
    dropped: list[FloorDrop] = field(default_factory=list)  # below a channel's relevance floor
    # Keyed by exact identity; the first decision about an identity is its fate (later ones are repeats).
    fates: dict[ArtifactKey, Fate] = field(default_factory=dict)
    # Code by the Builder's identity of a range (fingerprint, path, start line); positions count code items only.
    code_fates: dict[CodeIdentity, Fate] = field(default_factory=dict)

    # Each candidate's text as the Builder would render it, for matching query terms (never returned).
    texts: dict[ArtifactKey, str] = field(default_factory=dict, repr=False)
    # The code search (round 0, request Scope): its terms, its ranked lists, the ranges it moved ahead as
    # definitions of a queried identifier.
    code_search_terms: tuple[str, ...] = ()
    code_lists: list[CodeList] = field(default_factory=list)
    code_defining: set[CodeIdentity] = field(default_factory=set)
    # Each round run, and whether its pool contributed to the build (RecallRound.retained).
    rounds: dict[int, bool] = field(default_factory=dict)

    def remember(self, candidates: Iterable[Candidate]) -> None:
        for candidate in candidates:
            if candidate.key is not None:
                self.texts.setdefault(candidate.key, candidate.text)

    def channel(self, round: int, family: Family, scope_id: str) -> ChannelRecorder:
        return ChannelRecorder(self, round, family, scope_id)

    def unsearched(self, round: int, family: Family, scope_id: str, keys: Sequence[ArtifactKey]) -> None:
        """A family read without a ranking (Profile): its order is its rank, with no score."""
        self.lists.append(ChannelList(round, family, scope_id, "fused", tuple((k, 0.0) for k in keys)))

    def code_terms(self, terms: Sequence[str]) -> None:
        self.code_search_terms = tuple(terms)

    def code_list(self, channel: Channel, hits: Sequence[tuple[CodeIdentity, float]]) -> None:
        self.code_lists.append(CodeList(channel, tuple(hits)))

    def code_definitions(self, keys: Sequence[CodeIdentity]) -> None:
        self.code_defining.update(keys)

    def round_ran(self, round: int, retained: bool) -> None:
        self.rounds[round] = retained

    def checkpoint(self) -> frozenset[ArtifactKey]:
        """The identities with a fate now, so that fates decided in rounds later abandoned can be undone."""
        return frozenset(self.fates)

    def abandon_since(self, checkpoint: frozenset[ArtifactKey]) -> None:
        """Forget fates decided after ``checkpoint``: an abandoned round's exclusions are not the build's."""
        for key in [k for k in self.fates if k not in checkpoint]:
            del self.fates[key]

    def omitted(self, family: Family, key: ArtifactKey | None, reason: OmissionReason) -> None:
        if key is not None and key not in self.fates:
            self.fates[key] = Fate(family, reason=reason)

    def selected(self, family: Family, key: ArtifactKey, position: int, rendered_bytes: int, truncated: bool) -> None:
        self.fates[key] = Fate(family, position, rendered_bytes, truncated)

    def code_omitted(self, identity: CodeIdentity, reason: OmissionReason) -> None:
        self.code_fates.setdefault(identity, Fate("code", reason=reason))

    def code_selected(self, identity: CodeIdentity, position: int, rendered_bytes: int, truncated: bool) -> None:
        self.code_fates[identity] = Fate("code", position, rendered_bytes, truncated)
