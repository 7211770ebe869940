"""Route dependencies, shared OpenAPI error declarations, and the routers every area builds on."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.routing import APIRoute

from powercontext.contract.errors import ErrorBody
from powercontext.domain.access import Principal
from powercontext.runtime import Runtime
from powercontext.server.auth import current_principal
from powercontext.server.body_parsing import OffLoopBodyRoute
from powercontext.server.errors import request_id_of
from powercontext.store.base import FamilyStore
from powercontext.store.errors import FamilyUnsupported

SCOPE_PREFIX = "/v1/scopes/{scope_id}"


# The dependencies are ``async def`` although they never await: FastAPI runs a plain ``def`` dependency on a worker
# thread, and on this path each such hop cost a request ~0.3 ms of thread hand-off for a dictionary lookup.
async def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


async def _principal(request: Request) -> Principal:
    return current_principal(request)


async def _request_id(request: Request) -> str:
    return request_id_of(request)


RuntimeDep = Annotated[Runtime, Depends(_runtime)]
PrincipalDep = Annotated[Principal, Depends(_principal)]
RequestIdDep = Annotated[str, Depends(_request_id)]


def family_store_of(runtime: Runtime) -> FamilyStore:
    """The runtime's store as a ``FamilyStore``; ``family-unsupported`` if its adapter predates the families."""
    store = runtime.store
    if not isinstance(store, FamilyStore):
        raise FamilyUnsupported()
    return store


async def _family_store(request: Request) -> FamilyStore:
    return family_store_of(request.app.state.runtime)


FamilyStoreDep = Annotated[FamilyStore, Depends(_family_store)]


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the error envelope."""
    return {status: {"model": ErrorBody} for status in (*statuses, 422)}


def handler_name(route: APIRoute) -> str:
    """A route's OpenAPI ``operationId`` is its handler's name: one name for the code and the wire."""
    return route.name


def area_router(tag: str, prefix: str = "", *, responses: dict[int | str, dict[str, Any]] | None = None) -> APIRouter:
    """The router of one area: its OpenAPI tag, handlers named as their operations, large bodies parsed off the loop.

    ``responses`` are the errors every route of the area may answer; a route declares only its own on top.
    """
    return APIRouter(
        prefix=prefix,
        tags=[tag],
        route_class=OffLoopBodyRoute,
        responses=responses,
        generate_unique_id_function=handler_name,
    )


def scope_router(tag: str, below: str) -> APIRouter:
    """The router of an area under ``/v1/scopes/{scope_id}``, where every route answers 404 for an unknown Scope."""
    return area_router(tag, SCOPE_PREFIX + below, responses=errors(404))
