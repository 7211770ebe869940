"""Profile: commit a snapshot, read the committed head (exact revisions are in ``artifacts``)."""

from __future__ import annotations

from fastapi import APIRouter

from powercontext.contract.families import Profile, ProfileCommit
from powercontext.runtime import Runtime
from powercontext.server.body_parsing import OffLoopBodyRoute
from powercontext.server.family_mapping import profile_entries, profile_view
from powercontext.server.routes.deps import FamilyStoreDep, RuntimeDep, errors
from powercontext.store.base import FamilyStore, ProfileRecord
from powercontext.store.errors import ProfileNotFound

router = APIRouter(prefix="/v1/scopes/{scope_id}", tags=["profile"], route_class=OffLoopBodyRoute)


def committed_head(scope_id: str, runtime: Runtime, store: FamilyStore) -> ProfileRecord:
    """The committed head; ``scope-not-found`` before ``artifact-not-found`` when nothing is there."""
    record = store.read_profile_snapshot(scope_id)
    if record is None:
        runtime.store.get_scope(scope_id)
        raise ProfileNotFound()
    return record


@router.put(
    "/profile",
    operation_id="commit_profile",
    responses=errors(404, 409),
    summary="Commit the next Profile snapshot (compare-and-swap on expected_revision)",
)
def commit(scope_id: str, body: ProfileCommit, store: FamilyStoreDep) -> Profile:
    record = store.commit_profile(scope_id, body.expected_revision or 0, profile_entries(body.entries))
    return profile_view(record)


@router.get("/profile", operation_id="get_profile", responses=errors(404), summary="The committed Profile head")
def read(scope_id: str, runtime: RuntimeDep, store: FamilyStoreDep) -> Profile:
    return profile_view(committed_head(scope_id, runtime, store))
