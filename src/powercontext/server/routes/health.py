"""Liveness, readiness and capabilities."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from powercontext.contract.capabilities import Capabilities
from powercontext.server.routes.deps import RuntimeDep

router = APIRouter()


@router.get("/health/live", tags=["health"], operation_id="health_live")
def live() -> dict[str, str]:
    return {"status": "live"}


@router.get("/health/ready", tags=["health"], operation_id="health_ready", responses={503: {}})
def ready(runtime: RuntimeDep) -> Any:
    if runtime.store.ready():
        return {"status": "ready"}
    return JSONResponse({"status": "not_ready"}, status_code=503)


@router.get("/v1/capabilities", tags=["health"], operation_id="get_capabilities")
def capabilities(runtime: RuntimeDep) -> Capabilities:
    return runtime.capabilities()
