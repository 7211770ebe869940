"""Scopes."""

from __future__ import annotations

from fastapi import APIRouter

from powercontext.contract.scopes import Scope, ScopeCreate, ScopeList, ScopeUpdate
from powercontext.domain.access import ScopeForbidden
from powercontext.server.mapping import scope_view
from powercontext.server.routes.deps import PrincipalDep, RuntimeDep, errors

router = APIRouter(prefix="/v1/scopes", tags=["scopes"])


@router.post("", status_code=201, operation_id="create_scope", responses=errors(404, 409))
def create_scope(body: ScopeCreate, runtime: RuntimeDep, principal: PrincipalDep) -> Scope:
    if not principal.can_write(body.scope_id):
        raise ScopeForbidden("create")
    return scope_view(runtime.store.create_scope(body.scope_id, body.title, body.context_references))


@router.get("", operation_id="list_scopes")
def list_scopes(runtime: RuntimeDep, principal: PrincipalDep) -> ScopeList:
    """The Scopes this caller may read."""
    return ScopeList(items=[scope_view(s) for s in runtime.store.list_scopes() if principal.can_read(s.scope_id)])


@router.get("/{scope_id}", operation_id="get_scope", responses=errors(404))
def get_scope(scope_id: str, runtime: RuntimeDep) -> Scope:
    return scope_view(runtime.store.get_scope(scope_id))


@router.put("/{scope_id}", operation_id="update_scope", responses=errors(404))
def update_scope(scope_id: str, body: ScopeUpdate, runtime: RuntimeDep) -> Scope:
    return scope_view(runtime.store.update_scope(scope_id, body.title, body.context_references))
