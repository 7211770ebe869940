"""One channel's ranked list after its relevance floor: what fusion weighs, and how deep a channel reads."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from powercontext.domain.identity import ArtifactKey
from powercontext.search.fusion import ScoreRange


class _Keyed(Protocol):
    @property
    def key(self) -> ArtifactKey: ...


class ScoredHit(Protocol):
    @property
    def record(self) -> _Keyed: ...
    @property
    def score(self) -> float: ...


H = TypeVar("H", bound=ScoredHit)


@dataclass(frozen=True, slots=True)
class ChannelList(Generic[H]):
    """One channel's hits after its relevance floor, the score range of the list it read before it, and the
    hits the floor dropped (in rank order)."""

    hits: list[H]
    read_range: ScoreRange | None
    dropped: list[H] = dataclasses.field(default_factory=list)
    # What score fusion weighs instead of ``hits`` and their range, when the channel has a better measure for it.
    fusion_hits: list[H] | None = None
    fusion_range: ScoreRange | None = None
    # The stored embeddings of hits the channel read to weigh them, by key (handed on, not read again).
    stored: Mapping[ArtifactKey, Any] = dataclasses.field(default_factory=dict)

    @property
    def fused_hits(self) -> list[H]:
        return self.hits if self.fusion_hits is None else self.fusion_hits

    @property
    def fused_range(self) -> ScoreRange | None:
        return self.read_range if self.fusion_hits is None else self.fusion_range


def floored(read: list[H], kept: list[H]) -> ChannelList[H]:
    kept_keys = {hit.record.key for hit in kept}
    return ChannelList(kept, score_range(read), [hit for hit in read if hit.record.key not in kept_keys])


def score_range(hits: Sequence[ScoredHit]) -> ScoreRange | None:
    if not hits:
        return None
    scores = [float(hit.score) for hit in hits]
    return min(scores), max(scores)


def channel_depth(limit: int) -> int:
    """Each channel of a hybrid search contributes a deeper list than asked for, so fusion can promote an item
    that only one channel ranks highly."""
    return max(2 * limit, 32)
