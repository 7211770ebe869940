"""Route dependencies run on the event loop.

FastAPI runs a plain ``def`` dependency on a worker thread; on this 2-core machine each such hand-off cost a
request ~0.3 ms (``GET /v1/scopes/{id}`` went from 3.2 to 1.8 ms when the four became ``async``). Every
dependency here only reads request state, so a new plain ``def`` one would be a regression nobody notices.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from powercontext.server.app import create_app


def _dependencies(dependant: Dependant) -> Iterator[Any]:
    for sub in dependant.dependencies:
        yield sub.call
        yield from _dependencies(sub)


def _calls(routes: list[Any]) -> Iterator[tuple[str, Any]]:
    """(route path, dependency) for every route; this FastAPI keeps an included router's routes and its
    include-level dependencies (our ``authorized``) on the included router, not copied onto the app."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route.path, None
            for call in _dependencies(route.dependant):
                yield route.path, call
        included = getattr(route, "original_router", None)
        if included is not None:
            for depends in route.include_context.dependencies:
                yield "(include)", depends.dependency
            yield from _calls(included.routes)


def test_every_route_dependency_is_a_coroutine_function() -> None:
    calls = list(_calls(create_app(None).routes))
    assert len({path for path, _ in calls}) > 40  # the API's routes were walked, not an empty list
    assert any(getattr(call, "__module__", "") == "powercontext.server.auth" for _, call in calls)  # access checks
    blocking = sorted(
        {
            f"{path}: {getattr(call, '__module__', '?')}.{getattr(call, '__qualname__', repr(call))}"
            for path, call in calls
            if call is not None and not inspect.iscoroutinefunction(call)
        }
    )
    assert blocking == []
