"""``RecallTrace``: the content-free evidence one prepare produces while it runs.

Created per request and passed down; never global. The Receipt is a projection of this record, so
anything a Receipt reports must first be recorded here by the code that did the work.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from powercontext.contract.common import Family
from powercontext.contract.receipt import SearchFallback, SearchMode, SearchOutcome


@dataclass(frozen=True, slots=True)
class SearchCall:
    round: int
    family: Family
    mode: SearchMode
    outcome: SearchOutcome
    fallback_reason: SearchFallback


@dataclass(frozen=True, slots=True)
class RoundRecord:
    round: int
    outcome: str  # completed | expansion_failed
    retained: bool


@dataclass(frozen=True, slots=True)
class StageSample:
    stage: str
    duration_ms: float


@dataclass
class RecallTrace:
    requested_families: tuple[Family, ...]
    searches: list[SearchCall] = field(default_factory=list)
    rounds: list[RoundRecord] = field(default_factory=list)
    stages: list[StageSample] = field(default_factory=list)
    non_deterministic: bool = False

    def record_search(
        self, round: int, family: Family, mode: SearchMode, outcome: SearchOutcome, fallback_reason: SearchFallback
    ) -> None:
        self.searches.append(SearchCall(round, family, mode, outcome, fallback_reason))

    def record_round(self, round: int, outcome: str, retained: bool) -> None:
        self.rounds.append(RoundRecord(round, outcome, retained))

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time one instance of a runtime stage (recorded even when the stage raises)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.stages.append(StageSample(name, (time.perf_counter() - start) * 1000.0))
