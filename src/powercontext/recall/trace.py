"""``RecallTrace``: the content-free evidence one prepare produces while it runs.

Created per request and passed down; never global. The Receipt is a projection of this record, so
anything a Receipt reports must first be recorded here by the code that did the work.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from powercontext.contract.common import Family
from powercontext.contract.receipt import OmissionReason, SearchFallback, SearchMode, SearchOutcome

if TYPE_CHECKING:  # the rerank module records onto the trace; the trace only holds its records
    from powercontext.recall.rerank import RerankConfigRecord


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
class RerankCall:
    round: int
    config: RerankConfigRecord
    outcome: str  # selected | fallback | failed
    reason: str  # none | empty_selection | inference_unavailable | inference_timeout | invalid_output


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
    reranks: list[RerankCall] = field(default_factory=list)
    # Exclusions counted before the Builder (rerank, merging rounds), in the pools of retained rounds only.
    omissions: Counter[tuple[Family, OmissionReason]] = field(default_factory=Counter)
    non_deterministic: bool = False
    # Why this prepare cannot have a Receipt (evidence that is missing and must not be invented), if it cannot.
    evidence_gap: str | None = None
    # The model expander's alternative queries for this prepare: request-local, never reported anywhere.
    expansion_queries: list[str] | None = field(default=None, repr=False)

    def record_search(
        self, round: int, family: Family, mode: SearchMode, outcome: SearchOutcome, fallback_reason: SearchFallback
    ) -> None:
        self.searches.append(SearchCall(round, family, mode, outcome, fallback_reason))

    def record_round(self, round: int, outcome: str, retained: bool) -> None:
        self.rounds.append(RoundRecord(round, outcome, retained))

    def record_rerank(self, round: int, config: RerankConfigRecord, outcome: str, reason: str) -> None:
        self.reranks.append(RerankCall(round, config, outcome, reason))
        if config.model_backed:
            self.non_deterministic = True

    def omit(self, family: Family, reason: OmissionReason, count: int) -> None:
        if count > 0:
            self.omissions[(family, reason)] += count

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time one instance of a runtime stage (recorded even when the stage raises)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.stages.append(StageSample(name, (time.perf_counter() - start) * 1000.0))
