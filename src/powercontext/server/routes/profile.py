"""Profile: commit a snapshot, read the committed head (exact revisions are in ``artifacts``)."""

from __future__ import annotations

from powercontext.contract.families import Profile, ProfileCommit
from powercontext.runtime import Runtime
from powercontext.server.family_mapping import profile_entries, profile_view
from powercontext.server.routes.deps import FamilyStoreDep, RuntimeDep, errors, scope_router
from powercontext.store.base import FamilyStore, ProfileRecord
from powercontext.store.errors import ProfileNotFound

router = scope_router("profile", "/profile")


def committed_head(scope_id: str, runtime: Runtime, store: FamilyStore) -> ProfileRecord:
    """The committed head; ``scope-not-found`` before ``artifact-not-found`` when nothing is there."""
    record = store.read_profile_snapshot(scope_id)
    if record is None:
        runtime.store.get_scope(scope_id)
        raise ProfileNotFound()
    return record


@router.put(
    "", responses=errors(409), summary="Commit the next Profile snapshot (compare-and-swap on expected_revision)"
)
def commit_profile(scope_id: str, body: ProfileCommit, runtime: RuntimeDep, store: FamilyStoreDep) -> Profile:
    record = runtime.writes.commit_profile(scope_id, body.expected_revision or 0, profile_entries(body.entries))
    return profile_view(record)


@router.get("", summary="The committed Profile head")
def get_profile(scope_id: str, runtime: RuntimeDep, store: FamilyStoreDep) -> Profile:
    return profile_view(committed_head(scope_id, runtime, store))
