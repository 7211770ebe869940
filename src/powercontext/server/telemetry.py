"""One span and one latency sample per HTTP request, the Prometheus metrics ``/metrics`` serves
(``routes.metrics``), and the
OpenTelemetry SDK set-up from the standard ``OTEL_*`` variables (``otel`` extra).

Content-free by construction: spans carry the method, the route *template* (never the path, which holds
Scope and Artifact ids), the status and the request id; metric labels are route templates, methods,
status codes and fixed reason vocabularies. Telemetry failures never change a response.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from powercontext import observe
from powercontext.server.middleware import UNANSWERED_STATUS, WatchedReceive

log = logging.getLogger("powercontext.server")
PREPARE_ROUTE = "/v1/context/prepare"
METRICS_PATH = "/metrics"
# Requests the in-process MCP bridge makes: traced, but not counted as external traffic.
INTERNAL_HEADER = b"x-powercontext-internal"
# W3C trace context and baggage: the only request headers the propagator reads.
_TRACE_HEADERS = frozenset({b"traceparent", b"tracestate", b"baggage"})


class ServerMetrics:
    """The Server's Prometheus metrics, in a registry of its own (no process-global state)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.request_seconds = Histogram(
            "powercontext_http_request_duration_seconds",
            "HTTP request latency by route template, method and status.",
            ["route", "method", "status"],
            registry=r,
        )
        self.prepare_seconds = Histogram(
            "powercontext_prepare_duration_seconds",
            "Prepare latency by outcome (ready, empty, error).",
            ["outcome"],
            registry=r,
        )
        self.selected_items = Histogram(
            "powercontext_prepare_selected_items",
            "Items injected into one prepared context.",
            buckets=(0, 1, 2, 4, 6, 8, 12, 16, 24, 32),
            registry=r,
        )
        self.content_bytes = Histogram(
            "powercontext_prepare_content_bytes",
            "UTF-8 bytes of one prepared context.",
            buckets=(0, 512, 1024, 2048, 4096, 8000, 16384, 32768),
            registry=r,
        )
        self.search_fallbacks = Counter(
            "powercontext_search_fallbacks",
            "Searches that fell back, by family and reason.",
            ["family", "reason"],
            registry=r,
        )
        self.receipt_omissions = Counter(
            "powercontext_receipt_omissions",
            "Receipts dropped (event=context.receipt.omitted), by reason.",
            ["reason"],
            registry=r,
        )
        self.provider_calls = Counter(
            "powercontext_provider_calls", "Model provider calls by outcome.", ["outcome"], registry=r
        )

    def record(self, route: str, method: str, status: int, seconds: float, seen: observe.Observation) -> None:
        self.request_seconds.labels(route, method, str(status)).observe(seconds)
        for (family, reason), count in seen.search_fallbacks.items():
            self.search_fallbacks.labels(family, reason).inc(count)
        for reason, count in seen.receipt_omissions.items():
            self.receipt_omissions.labels(reason).inc(count)
        for outcome, count in seen.provider_calls.items():
            self.provider_calls.labels(outcome).inc(count)
        if route == PREPARE_ROUTE and method == "POST":
            outcome = seen.built[0] if seen.built is not None and status == 200 else "error"
            self.prepare_seconds.labels(outcome).observe(seconds)
            if seen.built is not None and status == 200:
                self.selected_items.observe(seen.built[2])
                self.content_bytes.observe(seen.built[1])

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class TelemetryMiddleware:
    """ASGI middleware: a server span per request (W3C trace context honoured) and the request's metrics."""

    def __init__(self, app: Any, metrics: ServerMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw_headers = scope.get("headers") or []
        internal = any(name == INTERNAL_HEADER for name, _ in raw_headers)
        parent = None
        if observe.tracing_active():
            carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in raw_headers if k in _TRACE_HEADERS}
            # Without trace headers the current context stays the parent (nothing to extract, and the
            # propagators cost tens of microseconds): the in-process MCP bridge's requests then nest under the
            # tool call that made them.
            if carrier:
                parent = propagate.extract(carrier, context=otel_context.get_current())
        method = scope["method"]
        span = observe.tracer().start_span(
            f"{method}", context=parent, kind=SpanKind.SERVER, attributes={"http.request.method": method}
        )
        # A recording request collects its stage spans and exports them after the response went out.
        observation = observe.Observation(deferred_spans=[] if span.is_recording() else None)
        token = observe.current.set(observation)
        status = 0  # none yet
        start = time.perf_counter()

        async def tracked_send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        attached = otel_context.attach(trace.set_span_in_context(span))
        try:
            await self.app(scope, watched := WatchedReceive(receive), tracked_send)
        except BaseException as exc:
            # Only the type: exception messages can carry request content.
            span.set_attribute("error.type", type(exc).__name__)
            raise
        finally:
            otel_context.detach(attached)
            elapsed = time.perf_counter() - start
            status = status or (UNANSWERED_STATUS if watched.gone else 500)  # no answer: client gone, or app failed
            observe.current.reset(token)
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            try:
                for stage_parent, stage_spans in observation.deferred_spans or ():
                    observe.export_stage_spans(stage_spans, stage_parent)
                if span.is_recording():
                    span.update_name(f"{method} {route}")
                    attributes: dict[str, str | int] = {"http.route": route, "http.response.status_code": status}
                    request_id = scope.get("state", {}).get("request_id")
                    if request_id:
                        attributes["powercontext.request_id"] = str(request_id)
                    span.set_attributes(attributes)  # one call: the SDK takes its lock once per call
                    if status >= 500:
                        span.set_status(Status(StatusCode.ERROR))
                span.end()
                if not internal:
                    self.metrics.record(route, method, status, elapsed, observation)
            except Exception as exc:  # telemetry must never change the response
                log.warning("event=telemetry.failed error_type=%s", type(exc).__name__)


def configure_tracing(env: Mapping[str, str] | None = None) -> bool:
    """Install the OpenTelemetry SDK when it is installed and ``OTEL_*`` asks for export; True if it did.

    Export is on when ``OTEL_TRACES_EXPORTER`` names ``otlp`` or ``console``, or when an OTLP endpoint
    (``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set.
    ``OTEL_SDK_DISABLED=true`` wins. Sampler, resource and batching follow the SDK's own ``OTEL_*``.
    """
    env = os.environ if env is None else env
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = [e.strip() for e in env.get("OTEL_TRACES_EXPORTER", "").split(",") if e.strip()]
    if not exporters and (env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        exporters = ["otlp"]
    exporters = [e for e in exporters if e != "none"]
    if not exporters:
        return False
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
    except ImportError:
        log.warning("event=telemetry.sdk_missing hint='install the otel extra'")
        return False
    provider = TracerProvider(resource=Resource.create({"service.name": env.get("OTEL_SERVICE_NAME", "powercontext")}))
    for name in exporters:
        exporter: SpanExporter
        if name == "console":
            exporter = ConsoleSpanExporter()
        elif name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporter = OTLPSpanExporter()
        else:
            log.warning("event=telemetry.unknown_exporter")
            continue
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return True
