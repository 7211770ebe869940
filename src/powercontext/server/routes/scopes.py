"""Scopes.

References are shown and accepted only as far as the caller may read them: a reference to a Scope the
caller may not read answers exactly like one to a Scope that does not exist (``referenced-scope-not-found``),
reads leave such references out, and an update keeps them (the caller cannot see what it would drop).
"""

from __future__ import annotations

from powercontext.contract.scopes import Scope, ScopeCreate, ScopeDelete, ScopeDeleted, ScopeList, ScopeUpdate
from powercontext.domain.access import Principal, ScopeForbidden
from powercontext.domain.errors import RequestRefused
from powercontext.server.mapping import scope_view
from powercontext.server.routes.deps import PrincipalDep, RuntimeDep, area_router, errors
from powercontext.store.base import ScopeEdit, ScopeRecord
from powercontext.store.errors import ReferencedScopeNotFound

router = area_router("scopes", "/v1/scopes")


class ConfirmationMismatch(RequestRefused):
    code, status = "confirmation-mismatch", 409

    def __init__(self, scope_id: str) -> None:
        super().__init__(f'deleting a Scope needs {{"confirm": "{scope_id}"}}: the body must repeat its scope_id')


def _require_readable(principal: Principal, references: list[str]) -> None:
    for index, ref in enumerate(references):
        if not principal.can_read(ref):
            raise ReferencedScopeNotFound(index, ref)


def _visible(record: ScopeRecord, principal: Principal) -> Scope:
    view = scope_view(record)
    readable = [r for r in view.context_references if principal.can_read(r)]
    return view.model_copy(update={"context_references": readable})


@router.post("", status_code=201, responses=errors(404, 409))
def create_scope(body: ScopeCreate, runtime: RuntimeDep, principal: PrincipalDep) -> Scope:
    """Create a Scope. ``referenced-scope-not-found`` (404) when a reference is missing or unreadable."""
    if not principal.can_write(body.scope_id):
        raise ScopeForbidden("create", grant="write")
    _require_readable(principal, body.context_references)
    record = runtime.writes.create_scope(body.scope_id, body.title, body.context_references)
    return _visible(record, principal)


@router.get("")
def list_scopes(runtime: RuntimeDep, principal: PrincipalDep) -> ScopeList:
    """The Scopes this caller may read."""
    return ScopeList(
        items=[_visible(s, principal) for s in runtime.store.list_scopes() if principal.can_read(s.scope_id)]
    )


@router.get("/{scope_id}", responses=errors(404))
def get_scope(scope_id: str, runtime: RuntimeDep, principal: PrincipalDep) -> Scope:
    """One Scope; references the caller may not read are left out."""
    return _visible(runtime.store.get_scope(scope_id), principal)


@router.delete("/{scope_id}", responses=errors(404, 409))
def delete_scope(scope_id: str, body: ScopeDelete, runtime: RuntimeDep) -> ScopeDeleted:
    """Delete the Scope and everything in it, for good: every Artifact and revision, Source, code evidence and
    index entry, and its name from other Scopes' references. ``confirm`` must repeat the ``scope_id``. Needs
    the ``delete`` grant (write does not give it)."""
    if body.confirm != scope_id:
        raise ConfirmationMismatch(scope_id)
    deleted = runtime.writes.delete_scope(scope_id)
    return ScopeDeleted(
        scope_id=deleted.scope_id,
        artifacts=deleted.artifacts,
        sources=deleted.sources,
        code_chunks=deleted.code_chunks,
        referenced_by=list(deleted.referenced_by),
    )


@router.put("/{scope_id}", responses=errors(404))
def update_scope(scope_id: str, body: ScopeUpdate, runtime: RuntimeDep, principal: PrincipalDep) -> Scope:
    """Replace title and references. ``scope-not-found`` names this Scope; ``referenced-scope-not-found``
    a reference that is missing or unreadable. References the caller may not read are kept, after the new ones."""
    _require_readable(principal, body.context_references)
    edit = ScopeEdit(body.title, tuple(body.context_references))
    record = runtime.writes.update_scope(scope_id, edit, keep=lambda ref: not principal.can_read(ref))
    return _visible(record, principal)
