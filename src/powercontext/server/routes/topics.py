"""Topic Memory writes, lifecycle and search (exact reads are in ``artifacts``)."""

from __future__ import annotations

from powercontext.contract.families import (
    TopicMemory,
    TopicMemoryCreate,
    TopicMemoryLifecycle,
    TopicMemoryRevise,
    TopicMemorySearchRequest,
    TopicMemorySearchResult,
)
from powercontext.contract.memory import PurgedArtifactView
from powercontext.server.family_mapping import new_topic, topic_hit_view, topic_view
from powercontext.server.mapping import purged_view
from powercontext.server.routes.deps import FamilyStoreDep, RuntimeDep, errors, scope_router
from powercontext.store.base import TopicEdit

router = scope_router("topic-memory", "/topic-memory")


@router.post("", status_code=201, responses=errors(409), summary="Create a Topic Memory (revision 1)")
def create_topic_memory(
    scope_id: str, body: TopicMemoryCreate, runtime: RuntimeDep, store: FamilyStoreDep
) -> TopicMemory:
    return topic_view(runtime.writes.create_topic(scope_id, new_topic(body)))


@router.post(
    "/search",
    responses=errors(409, 503, 504),
    summary="Search active Topic Memory heads (title and body): fts, vector or hybrid",
)
def search_topic_memory(
    scope_id: str, body: TopicMemorySearchRequest, runtime: RuntimeDep, store: FamilyStoreDep
) -> TopicMemorySearchResult:
    runtime.store.get_scope(scope_id)
    search = runtime.topic_search
    assert search is not None  # FamilyStoreDep answered 501 already when the store has no Topic Memory
    outcome = search.search(scope_id, body.query, body.mode, body.limit)
    return TopicMemorySearchResult(
        mode=outcome.mode, fallback_reason=outcome.fallback_reason, hits=[topic_hit_view(h) for h in outcome.hits]
    )


@router.put(
    "/{artifact_id}", responses=errors(409), summary="Write the next revision (compare-and-swap on expected_revision)"
)
def revise_topic_memory(
    scope_id: str, artifact_id: str, body: TopicMemoryRevise, runtime: RuntimeDep, store: FamilyStoreDep
) -> TopicMemory:
    edit = TopicEdit(body.title, body.body, None if body.tags is None else tuple(body.tags))
    record = runtime.writes.revise_topic(scope_id, artifact_id, body.expected_revision, edit)
    return topic_view(record)


@router.post("/{artifact_id}/lifecycle", responses=errors(409), summary="Retire or restore a Topic Memory")
def change_topic_memory_lifecycle(
    scope_id: str, artifact_id: str, body: TopicMemoryLifecycle, runtime: RuntimeDep, store: FamilyStoreDep
) -> TopicMemory:
    writes = runtime.writes
    return topic_view(writes.change_topic_lifecycle(scope_id, artifact_id, body.action, body.expected_revision))


@router.post(
    "/{artifact_id}/purge",
    responses=errors(410),
    summary="Erase every revision of a Topic Memory and remove it from every index (real deletion)",
)
def purge_topic_memory(scope_id: str, artifact_id: str, runtime: RuntimeDep) -> PurgedArtifactView:
    """Irreversible; exact reads then answer ``410 purged``. Needs the ``write`` grant (docs/operations.md)."""
    return purged_view(runtime.writes.purge_artifact(scope_id, "topic-memory", artifact_id))
