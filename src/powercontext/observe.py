"""Content-free observation of one request: OpenTelemetry spans and the counts that feed ``/metrics``.

* Spans use only the OpenTelemetry **API** (a base dependency). Without the ``otel`` extra's SDK, or with
  it but not configured, every span is a non-recording no-op.
* A request's counts (search fallbacks, provider calls, Receipt omissions, the built context's size)
  go into the ``Observation`` in a context variable the Server sets per request; deep code reports into
  it without knowing the Server exists. Context variables follow the request into its worker thread.

Attribute and label values are fixed vocabularies, numbers or digests: never a query, body, prompt,
Scope id, identity or path.
"""

from __future__ import annotations

import contextvars
import functools
from collections import Counter
from dataclasses import dataclass, field

from opentelemetry import context, trace
from opentelemetry.trace import StatusCode

TRACER_NAME = "powercontext"
UNIT_ATTRIBUTE = "powercontext.operation.unit"
_STAGE_ATTRIBUTES = {UNIT_ATTRIBUTE: "stage"}


@dataclass
class Observation:
    """What one request did, in counts only."""

    search_fallbacks: Counter[tuple[str, str]] = field(default_factory=Counter)  # (family, reason)
    provider_calls: Counter[str] = field(default_factory=Counter)  # outcome
    receipt_omissions: Counter[str] = field(default_factory=Counter)  # reason
    built: tuple[str, int, int] | None = None  # (status, content_bytes, selected_count)
    # With a recording request span: stage spans to export after the response was sent (the SDK's ~40 µs
    # per span stays off the response path). None: export them where they are recorded.
    deferred_spans: list[tuple[context.Context | None, list[StageSpan]]] | None = None


current: contextvars.ContextVar[Observation | None] = contextvars.ContextVar("powercontext_observation", default=None)


@functools.cache
def tracer() -> trace.Tracer:
    """PowerContext's tracer. Cached: before an SDK is installed it is a proxy that starts delegating to
    the real provider as soon as one is set, so caching never pins the no-op tracer."""
    return trace.get_tracer(TRACER_NAME)


def tracing_active() -> bool:
    """Whether a real tracer provider is installed (without one, every span is a no-op)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


@dataclass(slots=True)
class StageSpan:
    """One runtime stage as it will be exported: recorded while the stage runs (cheap: a few fields), turned
    into an OpenTelemetry span later by ``export_stage_spans``. Annotations use the span API's names."""

    name: str
    start_ns: int
    end_ns: int = 0
    attributes: dict[str, str | int] = field(default_factory=lambda: dict(_STAGE_ATTRIBUTES))
    error_type: str | None = None

    def set_attribute(self, key: str, value: str | int) -> None:
        self.attributes[key] = value

    def set_attributes(self, attributes: dict[str, str | int]) -> None:
        self.attributes.update(attributes)


def hand_over_stage_spans(spans: list[StageSpan], parent: context.Context | None) -> None:
    """Export a prepare's stage spans now, or, inside a Server request, leave them for the request's
    telemetry to export once the response has been sent (``Observation.deferred_spans``)."""
    if not spans:
        return
    observation = current.get()
    if observation is not None and observation.deferred_spans is not None:
        observation.deferred_spans.append((parent, spans))
    else:
        export_stage_spans(spans, parent)


def export_stage_spans(spans: list[StageSpan], parent: context.Context | None) -> None:
    """The SDK spans for recorded stages, children of ``parent``, with the stages' own start and end times."""
    t = tracer()
    for stage in spans:
        span = t.start_span(stage.name, context=parent, attributes=stage.attributes, start_time=stage.start_ns)
        if stage.error_type is not None:
            # Only the exception's type: its message can carry request content.
            span.set_attribute("error.type", stage.error_type)
            span.set_status(StatusCode.ERROR)
        span.end(end_time=stage.end_ns)


def note_search(round: int, family: str, mode: str, outcome: str, fallback_reason: str, span: StageSpan | None) -> None:
    if span is not None:
        # Each attribute costs the SDK a few microseconds: the defaults (round 0, no fallback) are left out.
        attributes: dict[str, str | int] = {
            "powercontext.family": family,
            "powercontext.search.mode": mode,
            "powercontext.search.outcome": outcome,
        }
        if round:
            attributes["powercontext.round"] = round
        if fallback_reason != "none":
            attributes["powercontext.search.fallback_reason"] = fallback_reason
        span.set_attributes(attributes)
    observation = current.get()
    if observation is not None and fallback_reason != "none":
        observation.search_fallbacks[(family, fallback_reason)] += 1


def note_build(
    status: str, content_bytes: int, selected_count: int, omitted_count: int, span: StageSpan | None
) -> None:
    """The built context's size, on the ``context.build`` span (when recording) and for the prepare histograms."""
    if span is not None:
        span.set_attributes(
            {
                "powercontext.context.status": status,
                "powercontext.context.content_bytes": content_bytes,
                "powercontext.context.selected_count": selected_count,
                "powercontext.context.omitted_count": omitted_count,
            }
        )
    observation = current.get()
    if observation is not None:
        observation.built = (status, content_bytes, selected_count)


def note_rerank(outcomes: Counter[str], candidate_count: int, kept_count: int, span: StageSpan | None) -> None:
    """A rerank stage's invocations by outcome (``selected``, ``fallback``, ``failed``) and pool sizes."""
    if span is not None:
        attributes: dict[str, str | int] = {
            "powercontext.rerank.candidate_count": candidate_count,
            "powercontext.rerank.kept_count": kept_count,
        }
        for outcome, count in outcomes.items():
            attributes[f"powercontext.rerank.{outcome}_count"] = count
        span.set_attributes(attributes)


def note_provider_call(outcome: str) -> None:
    """One call to a model provider: ``ok``, ``inference_unavailable`` or ``inference_timeout``."""
    observation = current.get()
    if observation is not None:
        observation.provider_calls[outcome] += 1


def note_receipt_omitted(reason: str, span: StageSpan | None = None) -> None:
    if span is not None:
        span.set_attribute("powercontext.receipt.omitted_reason", reason)
    observation = current.get()
    if observation is not None:
        observation.receipt_omissions[reason] += 1
