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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from opentelemetry import context, trace
from opentelemetry.trace import Span, StatusCode

TRACER_NAME = "powercontext"
UNIT_ATTRIBUTE = "powercontext.operation.unit"


@dataclass
class Observation:
    """What one request did, in counts only."""

    search_fallbacks: Counter[tuple[str, str]] = field(default_factory=Counter)  # (family, reason)
    provider_calls: Counter[str] = field(default_factory=Counter)  # outcome
    receipt_omissions: Counter[str] = field(default_factory=Counter)  # reason
    built: tuple[str, int, int] | None = None  # (status, content_bytes, selected_count)


current: contextvars.ContextVar[Observation | None] = contextvars.ContextVar("powercontext_observation", default=None)


@functools.cache
def tracer() -> trace.Tracer:
    """PowerContext's tracer. Cached: before an SDK is installed it is a proxy that starts delegating to
    the real provider as soon as one is set, so caching never pins the no-op tracer."""
    return trace.get_tracer(TRACER_NAME)


def tracing_active() -> bool:
    """Whether a real tracer provider is installed (without one, every span is a no-op)."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


@contextmanager
def stage_span(name: str) -> Iterator[Span]:
    """A span for one runtime stage, a child of whatever span is current (the request's, in the Server)."""
    span = tracer().start_span(name, attributes={UNIT_ATTRIBUTE: "stage"})
    token = context.attach(trace.set_span_in_context(span))
    try:
        yield span
    except BaseException as exc:
        # Only the type: an exception message can carry request content.
        span.set_attribute("error.type", type(exc).__name__)
        span.set_status(StatusCode.ERROR)
        raise
    finally:
        context.detach(token)
        span.end()


def note_search(round: int, family: str, mode: str, outcome: str, fallback_reason: str, span: Span | None) -> None:
    if span is not None and span.is_recording():
        span.set_attributes(
            {
                "powercontext.round": round,
                "powercontext.family": family,
                "powercontext.search.mode": mode,
                "powercontext.search.outcome": outcome,
                "powercontext.search.fallback_reason": fallback_reason,
            }
        )
    observation = current.get()
    if observation is not None and fallback_reason != "none":
        observation.search_fallbacks[(family, fallback_reason)] += 1


def note_build(status: str, content_bytes: int, selected_count: int, omitted_count: int) -> None:
    """The built context's size, on the current (``context.build``) span and for the prepare histograms."""
    span = trace.get_current_span()
    if span.is_recording():
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


def note_provider_call(outcome: str) -> None:
    """One call to a model provider: ``ok``, ``inference_unavailable`` or ``inference_timeout``."""
    observation = current.get()
    if observation is not None:
        observation.provider_calls[outcome] += 1


def note_receipt_omitted(reason: str) -> None:
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attribute("powercontext.receipt.omitted_reason", reason)
    observation = current.get()
    if observation is not None:
        observation.receipt_omissions[reason] += 1
