"""The FastAPI application factory."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import AsyncIterator, Callable, MutableMapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

import anyio.to_thread
from fastapi import Depends, FastAPI
from fastapi.routing import APIRoute

from powercontext import __version__
from powercontext.runtime import Runtime
from powercontext.server.auth import AccessTable, authorized
from powercontext.server.body_limits import BodyLimits
from powercontext.server.errors import install_error_handlers
from powercontext.server.gate import RequestGate
from powercontext.server.host_guard import HostOriginGuard, HostRules
from powercontext.server.inspector import INSPECTOR_PATHS, inspector_router
from powercontext.server.mcp_route import mount_mcp_if_available
from powercontext.server.middleware import RequestIdMiddleware
from powercontext.server.readiness import UNREADABLE, ReadinessProbe, store_readiness
from powercontext.server.routes import (
    artifacts,
    code,
    context,
    experiences,
    health,
    memory,
    memory_candidates,
    metrics,
    profile,
    prompts,
    root,
    scopes,
    sources,
    topics,
)
from powercontext.server.routes.deps import errors
from powercontext.server.telemetry import ServerMetrics, TelemetryMiddleware

# FastAPI gives a route's one body parameter (``body`` in every route here) its name as an alias and validates
# the body through ``Annotated[Model, Field(alias="body")]``; pydantic 2.12+ warns on the first request of every
# such route that the alias has no effect there. It has none to have (the whole body is the model), so a new
# user's first write printed a false alarm from the libraries' internals: that one warning is silenced.
warnings.filterwarnings(
    "ignore",
    message=r"The 'alias' attribute with value 'body' was provided to the `Field\(\)` function",
    module=r"pydantic\.",
)


def _no_native_telemetry() -> dict[str, Any]:
    """Newer FastAPI traces requests natively with the raw URL path (it holds Scope and Artifact ids) and
    records exception messages; PowerContext's own middleware traces content-free, so that is turned off."""
    if "telemetry" not in inspect.signature(FastAPI.__init__).parameters:
        return {}
    off = {"tracing": False, "metrics": False, "logs": False, "operation_spans": False}
    return {"telemetry": off}


def create_app(
    runtime: Runtime | None,
    *,
    close_runtime: bool = True,
    access: AccessTable | None = None,
    inspector: bool = True,
    hosts: HostRules | None = None,
) -> FastAPI:
    """The Server for ``runtime``. ``None`` builds an app only for schema export.

    ``access`` turns on bearer-token principals with per-Scope grants; without it every caller may do anything.
    ``inspector`` serves the Context Inspector page at ``/inspector`` (static; it calls the API like any client).
    Either way the token (when required) and the body's size are checked before the body is read
    (``server.gate``). ``hosts`` lists the ``Host``/``Origin`` names the Server answers to (default: loopback
    only; ``server.host_guard``); every route, ``/mcp`` and ``/metrics`` included, checks them first.
    """

    app = FastAPI(
        title="PowerContext",
        version=__version__,
        summary="Bounded, cited, injection-ready context for AI agents, with content-free Receipts.",
        lifespan=_lifespan(runtime, close_runtime),
        **_no_native_telemetry(),
    )
    app.state.runtime = runtime
    app.state.readiness = ReadinessProbe(store_readiness(runtime.store) if runtime is not None else lambda: UNREADABLE)
    app.state.access = access
    install_error_handlers(app)
    _include_routes(app, inspector)
    # Streamable-HTTP MCP at /mcp when the `mcp` extra is installed (not part of the OpenAPI document).
    app.state.mcp_run = mount_mcp_if_available(app) if runtime is not None else None
    _add_middleware(app, access, hosts or HostRules(), _public_paths(app, inspector))
    return app


def _lifespan(runtime: Runtime | None, close_runtime: bool) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if app.state.mcp_run is not None:
                await stack.enter_async_context(app.state.mcp_run())
            await _warm_up(app)
            if runtime is not None:
                runtime.start_background()
            yield
        app.state.readiness.close()
        if runtime is not None and close_runtime:
            runtime.close()

    return lifespan


async def _warm_up(app: FastAPI) -> None:
    """Do before the first request what the first requests would otherwise do while holding the interpreter lock.

    FastAPI builds each included router's matching state (parameter models, validators) on the first
    request that walks past it, ~80 ms, and anyio imports its thread backend on the first request run in
    a worker thread, ~20 ms. Inside a fresh Server's first requests these stalled every other request,
    `/health/live` included (bench/body_parse_liveness.py). One request to a path no route serves walks
    every router; it goes to the router directly, past the middleware, so it is neither logged nor counted.
    """
    await anyio.to_thread.run_sync(lambda: None)
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/.powercontext-start-up",
        "raw_path": b"/.powercontext-start-up",
        "root_path": "",
        "query_string": b"",
        "headers": [],
        "client": None,
        "server": None,
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        pass

    await app.router(scope, receive, send)


def _include_routes(app: FastAPI, inspector: bool) -> None:
    """Mount every router and record, on ``app.state``, what the gate and the error handlers look up per route."""
    routers = (
        health.router,  # the only routes without a principal: probes must work without a token
        scopes.router,
        memory.router,
        topics.router,
        experiences.router,
        profile.router,
        prompts.router,
        sources.router,
        memory_candidates.router,
        memory_candidates.policy_router,
        artifacts.router,
        context.router,
        code.router,
    )
    app.include_router(health.router)
    app.include_router(root.router)  # GET /: links to /inspector and /docs, for a person with a browser
    app.state.inspector_on = inspector
    app.include_router(metrics.router)  # its own token rule: the ``metrics`` grant
    for router in routers[1:]:
        app.include_router(router, dependencies=[Depends(authorized)], responses=errors(401, 403, 413, 415))
    served = [root.router, metrics.router, *routers]  # every route, for the Allow header of a 405
    if inspector:
        served.append(inspector_router())
        app.include_router(served[-1])
    # The routes behind ``authorize``: their body errors answer 401/403 first (``refusal_before_validation``).
    app.state.authorized_routes = frozenset(id(route) for router in routers[1:] for route in router.routes)
    # For the Allow header of a 405: which methods each path template serves.
    app.state.route_methods = [
        (route.path_regex, route.methods)
        for router in served
        for route in router.routes
        if isinstance(route, APIRoute)
    ]
    # Each route's body limit, looked up by the gate before routing and published by GET /v1/capabilities.
    app.state.body_limits = BodyLimits(
        route for router in routers for route in router.routes if isinstance(route, APIRoute)
    )


def _public_paths(app: FastAPI, inspector: bool) -> frozenset[str]:
    """The paths the gate lets through without a token: the probes, the API documents and the Inspector page."""
    public_paths = {route.path for route in health.router.routes if isinstance(route, APIRoute)} | {"/"}
    public_paths.update(
        url for url in (app.openapi_url, app.docs_url, app.redoc_url, app.swagger_ui_oauth2_redirect_url) if url
    )
    if inspector:  # the page holds no data: it asks for a token and sends it with each API call
        public_paths.update(INSPECTOR_PATHS)
    return frozenset(public_paths)


def _add_middleware(app: FastAPI, access: AccessTable | None, hosts: HostRules, public_paths: frozenset[str]) -> None:
    # Innermost first: the gate runs inside telemetry (its refusals are counted) and inside RequestIdMiddleware
    # (its refusals carry the request id too).
    app.add_middleware(RequestGate, access=access, body_limits=app.state.body_limits, public_paths=public_paths)
    # Outside the gate: a request to a foreign host name is refused before its token is even looked at.
    app.add_middleware(HostOriginGuard, rules=hosts)
    app.state.metrics = ServerMetrics()
    app.add_middleware(TelemetryMiddleware, metrics=app.state.metrics)
    app.add_middleware(RequestIdMiddleware)
