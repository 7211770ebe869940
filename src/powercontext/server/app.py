"""The FastAPI application factory."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.routing import APIRoute

from powercontext import __version__
from powercontext.runtime import Runtime
from powercontext.server.auth import AccessTable, authorize
from powercontext.server.errors import install_error_handlers
from powercontext.server.mcp_route import mount_mcp_if_available
from powercontext.server.middleware import RequestIdMiddleware
from powercontext.server.routes import artifacts, code, context, experiences, health, memory, profile, scopes, topics
from powercontext.server.routes.deps import errors
from powercontext.server.telemetry import ServerMetrics, TelemetryMiddleware


def _no_native_telemetry() -> dict[str, Any]:
    """Newer FastAPI traces requests natively with the raw URL path (it holds Scope and Artifact ids) and
    records exception messages; PowerContext's own middleware traces content-free, so that is turned off."""
    if "telemetry" not in inspect.signature(FastAPI.__init__).parameters:
        return {}
    off = {"tracing": False, "metrics": False, "logs": False, "operation_spans": False}
    return {"telemetry": off}


def create_app(runtime: Runtime | None, *, close_runtime: bool = True, access: AccessTable | None = None) -> FastAPI:
    """The Server for ``runtime``. ``None`` builds an app only for schema export.

    ``access`` turns on bearer-token principals with per-Scope grants; without it every caller may do anything.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if app.state.mcp_run is not None:
                await stack.enter_async_context(app.state.mcp_run())
            yield
        if runtime is not None and close_runtime:
            runtime.close()

    app = FastAPI(
        title="PowerContext",
        version=__version__,
        summary="Bounded, cited, injection-ready context for AI agents, with content-free Receipts.",
        lifespan=lifespan,
        **_no_native_telemetry(),
    )
    app.state.runtime = runtime
    app.state.access = access
    install_error_handlers(app)
    routers = (
        health.router,  # the only routes without a principal: probes must work without a token
        scopes.router,
        memory.router,
        topics.router,
        experiences.router,
        profile.router,
        artifacts.router,
        context.router,
        code.router,
    )
    app.include_router(health.router)
    for router in routers[1:]:
        app.include_router(router, dependencies=[Depends(authorize)], responses=errors(401, 403))
    # For the Allow header of a 405: which methods each path template serves.
    app.state.route_methods = [
        (route.path_regex, route.methods)
        for router in routers
        for route in router.routes
        if isinstance(route, APIRoute)
    ]
    # Streamable-HTTP MCP at /mcp when the `mcp` extra is installed (not part of the OpenAPI document).
    app.state.mcp_run = mount_mcp_if_available(app) if runtime is not None else None
    app.state.metrics = ServerMetrics()
    app.add_middleware(TelemetryMiddleware, metrics=app.state.metrics)  # inside the request id
    app.add_middleware(RequestIdMiddleware)
    return app
