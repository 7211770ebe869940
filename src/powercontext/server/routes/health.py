"""Liveness, readiness and capabilities.

The probes are ``async`` and take no sync dependency: they answer from the event loop, so they never wait
for a thread of the request pool (which a stalled provider or a slow store can fill).
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from powercontext.contract.capabilities import Capabilities
from powercontext.server.body_limits import BodyLimits
from powercontext.server.readiness import ReadinessProbe
from powercontext.server.routes.deps import RuntimeDep, area_router

router = area_router("health")


# The summaries as published (once derived from shorter handler names).
@router.get("/health/live", summary="Live")
async def health_live() -> dict[str, str]:
    return {"status": "live"}


@router.get("/health/ready", responses={503: {}}, summary="Ready")
async def health_ready(request: Request) -> Any:
    probe: ReadinessProbe = request.app.state.readiness
    problem = await probe.problem()
    if problem is None:
        return {"status": "ready", **_detail(request)}
    # Why not, for an operator: a stable reason (an error code) and what to do; never content.
    return JSONResponse(
        {"status": "not_ready", "reason": problem.reason, "message": problem.message, **_detail(request)},
        status_code=503,
    )


def _detail(request: Request) -> dict[str, Any]:
    """The Server's background work, each job's content-free progress under its name (``jobs.background``)."""
    runtime = request.app.state.runtime
    if runtime is None:
        return {}
    detail: dict[str, Any] = runtime.background.detail()
    return detail


@router.get("/v1/capabilities", summary="Capabilities")
def get_capabilities(request: Request, runtime: RuntimeDep) -> Capabilities:
    published = runtime.capabilities()
    # The body limits belong to the routes, which only the Server knows.
    body_limits: BodyLimits = request.app.state.body_limits
    route_limits = body_limits.published()
    limits = published.limits.model_copy(update={"route_max_bytes": route_limits})
    return published.model_copy(update={"limits": limits})
