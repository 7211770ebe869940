"""``GET /metrics``: the Server's Prometheus metrics.

Without an access file anyone who reaches the Server may read them (a loopback service; the Host/Origin
rules still apply). With one, the request gate has already required a known token, and this route also
requires that token's principal to hold the ``metrics`` grant. Not part of the OpenAPI document.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST

from powercontext.domain.access import MetricsForbidden
from powercontext.server.auth import current_principal
from powercontext.server.telemetry import METRICS_PATH, ServerMetrics

router = APIRouter(include_in_schema=False)


@router.get(METRICS_PATH)
async def metrics(request: Request) -> Response:
    # async, no dependency: like the probes it answers from the event loop, never queued behind request threads.
    if not current_principal(request).metrics:
        raise MetricsForbidden()
    exported: ServerMetrics = request.app.state.metrics
    return Response(exported.exposition(), media_type=CONTENT_TYPE_LATEST)
