"""``RecallTrace``: the content-free evidence one prepare produces while it runs.

Created per request and passed down; never global. The Receipt is a projection of this record, so
anything a Receipt reports must first be recorded here by the code that did the work.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from opentelemetry import context as otel_context

from powercontext import observe
from powercontext.contract.common import Family
from powercontext.contract.receipt import OmissionReason, SearchFallback, SearchMode, SearchOutcome
from powercontext.recall.budget import PrepareBudget
from powercontext.recall.rerank_record import RerankConfigRecord

if TYPE_CHECKING:
    from powercontext.recall.probe import ExplainProbe

# Stages that a ``record_search`` follows: the search's attributes go onto their span.
_SEARCH_STAGES = frozenset({"memory.search", "topic_memory.search", "experience.search", "code.query", "profile.read"})


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
    # What this prepare may still spend on providers (time, model calls); not evidence, never reported.
    budget: PrepareBudget = field(default_factory=PrepareBudget.unbounded, repr=False, compare=False)
    # Per-candidate evidence for the diagnostic explain route; None on every other prepare.
    probe: ExplainProbe | None = field(default=None, repr=False, compare=False)
    # Stage spans recorded while tracing is on, handed over by ``finish``.
    _spans: list[observe.StageSpan] = field(default_factory=list, repr=False, compare=False)
    _tracing: bool | None = field(default=None, repr=False, compare=False)
    # The last search stage's span, which the following ``record_search`` annotates.
    _pending: observe.StageSpan | None = field(default=None, repr=False, compare=False)
    # The span of the stage running now, for annotations (``observe.note_build``); None when not tracing.
    active_span: observe.StageSpan | None = field(default=None, repr=False, compare=False)
    # The parent of every stage span: the context current when the trace first recorded a stage.
    _parent: otel_context.Context | None = field(default=None, repr=False, compare=False)

    def record_search(
        self, round: int, family: Family, mode: SearchMode, outcome: SearchOutcome, fallback_reason: SearchFallback
    ) -> None:
        self.searches.append(SearchCall(round, family, mode, outcome, fallback_reason))
        pending, self._pending = self._pending, None
        observe.note_search(round, family, mode, outcome, fallback_reason, pending)

    def record_round(self, round: int, outcome: str, retained: bool) -> None:
        self.rounds.append(RoundRecord(round, outcome, retained))
        if self.probe is not None:
            self.probe.round_ran(round, retained)

    def record_rerank(self, round: int, config: RerankConfigRecord, outcome: str, reason: str) -> None:
        self.reranks.append(RerankCall(round, config, outcome, reason))
        if config.model_backed:
            self.non_deterministic = True

    def omit(self, family: Family, reason: OmissionReason, count: int) -> None:
        if count > 0:
            self.omissions[(family, reason)] += count

    @contextmanager
    def stage(self, name: str, *, timed: bool = True) -> Iterator[None]:
        """Time one instance of a runtime stage (recorded even when the stage raises; ``timed=False`` for work
        that is not a Receipt stage, e.g. assembling the Receipt), and record its span while tracing is on.

        Spans are only recorded here (name, times, attributes) and exported by ``finish``: inside the Server
        after the response has gone out, since the SDK costs tens of microseconds per span. Their parent is
        the context current when the first stage started (the request's span in the Server).
        """
        self._pending = None
        if self._tracing is None:
            self._tracing = observe.tracing_active()
            self._parent = otel_context.get_current()
        span = observe.StageSpan(name, time.time_ns()) if self._tracing else None
        self.active_span = span
        start = time.perf_counter()
        try:
            yield
        except BaseException as exc:
            if span is not None:
                span.error_type = type(exc).__name__
            raise
        finally:
            self.active_span = None
            if timed:
                self.stages.append(StageSample(name, (time.perf_counter() - start) * 1000.0))
            if span is not None:
                span.end_ns = time.time_ns()
                self._spans.append(span)
                if name in _SEARCH_STAGES and span.error_type is None:
                    self._pending = span

    def span(self, name: str) -> AbstractContextManager[None]:
        """A span for work that is not a timed Receipt stage (e.g. assembling the Receipt)."""
        return self.stage(name, timed=False)

    def finish(self) -> None:
        """Hand the recorded stage spans over for export (see ``observe.hand_over_stage_spans``); once."""
        spans, self._spans = self._spans, []
        observe.hand_over_stage_spans(spans, self._parent)
