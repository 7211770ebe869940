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

from opentelemetry import context as otel_context
from opentelemetry.trace import Span, StatusCode

from powercontext import observe
from powercontext.contract.common import Family
from powercontext.contract.receipt import OmissionReason, SearchFallback, SearchMode, SearchOutcome

if TYPE_CHECKING:  # the rerank module records onto the trace; the trace only holds its records
    from powercontext.recall.rerank import RerankConfigRecord

# Stages that a ``record_search`` follows: their span stays open until the search is recorded on it.
_STAGE_ATTRIBUTES = {observe.UNIT_ATTRIBUTE: "stage"}
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
    # A search stage's span, ended (at the stage's own end time) once its search is recorded.
    _pending: tuple[Span, int] | None = field(default=None, repr=False, compare=False)
    # The recording span of the stage running now, for annotations (``observe.note_build``); else None.
    active_span: Span | None = field(default=None, repr=False, compare=False)
    # The parent of every stage span: the context current when the first one started.
    _parent: otel_context.Context | None = field(default=None, repr=False, compare=False)

    def record_search(
        self, round: int, family: Family, mode: SearchMode, outcome: SearchOutcome, fallback_reason: SearchFallback
    ) -> None:
        self.searches.append(SearchCall(round, family, mode, outcome, fallback_reason))
        pending, self._pending = self._pending, None
        observe.note_search(round, family, mode, outcome, fallback_reason, pending[0] if pending else None)
        if pending is not None:
            pending[0].end(end_time=pending[1])

    def _end_pending(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending[0].end(end_time=pending[1])

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
        """Time one instance of a runtime stage (recorded even when the stage raises), as a span too.

        The span's parent is the context current when the trace first made a span (the request's span in
        the Server), passed explicitly; the stage's span is not attached as current, because nothing inside
        a stage starts spans of its own, and attaching costs a context copy per stage. Code that annotates
        the running stage uses ``active_span``.
        """
        self._end_pending()
        if self._parent is None:
            self._parent = otel_context.get_current()
        span = observe.tracer().start_span(name, context=self._parent, attributes=_STAGE_ATTRIBUTES)
        start = time.perf_counter()
        if not span.is_recording():  # no SDK, or sampled out: only the timing (the common, cheap path)
            try:
                yield
            finally:
                self.stages.append(StageSample(name, (time.perf_counter() - start) * 1000.0))
            return
        self.active_span = span
        failed = False
        try:
            yield
        except BaseException as exc:
            # Only the exception *type*: messages can carry request content.
            failed = True
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(StatusCode.ERROR)
            raise
        finally:
            self.active_span = None
            self.stages.append(StageSample(name, (time.perf_counter() - start) * 1000.0))
            if name in _SEARCH_STAGES and not failed:
                self._pending = (span, time.time_ns())
            else:
                span.end()

    @contextmanager
    def span(self, name: str) -> Iterator[None]:
        """A span for work that is not a timed Receipt stage (e.g. assembling the Receipt)."""
        self._end_pending()
        if self._parent is None:
            self._parent = otel_context.get_current()
        with observe.stage_span(name, self._parent) as span:
            self.active_span = span if span.is_recording() else None
            try:
                yield
            finally:
                self.active_span = None
