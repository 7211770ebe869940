"""Route dependencies and shared OpenAPI error declarations."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from powercontext.contract.errors import ErrorBody
from powercontext.domain.access import Principal
from powercontext.runtime import Runtime
from powercontext.server.auth import current_principal
from powercontext.store.base import FamilyStore
from powercontext.store.errors import FamilyUnsupported


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(_runtime)]
PrincipalDep = Annotated[Principal, Depends(current_principal)]


def family_store_of(runtime: Runtime) -> FamilyStore:
    """The runtime's store as a ``FamilyStore``; ``family-unsupported`` if its adapter predates the families."""
    store = runtime.store
    if not isinstance(store, FamilyStore):
        raise FamilyUnsupported()
    return store


def _family_store(request: Request) -> FamilyStore:
    return family_store_of(_runtime(request))


FamilyStoreDep = Annotated[FamilyStore, Depends(_family_store)]


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the error envelope."""
    return {status: {"model": ErrorBody} for status in (*statuses, 422)}
