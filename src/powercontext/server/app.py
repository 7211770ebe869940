"""The FastAPI application factory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.routing import APIRoute

from powercontext import __version__
from powercontext.runtime import Runtime
from powercontext.server.errors import install_error_handlers
from powercontext.server.middleware import RequestIdMiddleware
from powercontext.server.routes import artifacts, code, context, experiences, health, memory, profile, scopes, topics


def create_app(runtime: Runtime | None, *, close_runtime: bool = True) -> FastAPI:
    """The Server for ``runtime``. ``None`` builds an app only for schema export."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        if runtime is not None and close_runtime:
            runtime.close()

    app = FastAPI(
        title="PowerContext",
        version=__version__,
        summary="Bounded, cited, injection-ready context for AI agents, with content-free Receipts.",
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    install_error_handlers(app)
    routers = (
        health.router,
        scopes.router,
        memory.router,
        topics.router,
        experiences.router,
        profile.router,
        artifacts.router,
        context.router,
        code.router,
    )
    for router in routers:
        app.include_router(router)
    # For the Allow header of a 405: which methods each path template serves.
    app.state.route_methods = [
        (route.path_regex, route.methods)
        for router in routers
        for route in router.routes
        if isinstance(route, APIRoute)
    ]
    app.add_middleware(RequestIdMiddleware)
    return app
