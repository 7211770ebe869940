"""Topic Memory writes, lifecycle and search (exact reads are in ``artifacts``)."""

from __future__ import annotations

from fastapi import APIRouter

from powercontext.contract.families import (
    TopicMemory,
    TopicMemoryCreate,
    TopicMemoryLifecycle,
    TopicMemoryRevise,
    TopicMemorySearchRequest,
    TopicMemorySearchResult,
)
from powercontext.search.families import TopicMemorySearch
from powercontext.server.family_mapping import new_topic, topic_hit_view, topic_view
from powercontext.server.routes.deps import FamilyStoreDep, RuntimeDep, errors

router = APIRouter(prefix="/v1/scopes/{scope_id}", tags=["topic-memory"])


@router.post(
    "/topic-memory",
    status_code=201,
    operation_id="create_topic_memory",
    responses=errors(404, 409),
    summary="Create a Topic Memory (revision 1)",
)
def create(scope_id: str, body: TopicMemoryCreate, store: FamilyStoreDep) -> TopicMemory:
    return topic_view(store.create_topic(scope_id, new_topic(body)))


@router.post(
    "/topic-memory/search",
    operation_id="search_topic_memory",
    responses=errors(404),
    summary="Full-text search over active Topic Memory heads (title and body)",
)
def search(
    scope_id: str, body: TopicMemorySearchRequest, runtime: RuntimeDep, store: FamilyStoreDep
) -> TopicMemorySearchResult:
    runtime.store.get_scope(scope_id)
    outcome = TopicMemorySearch(store).search(scope_id, body.query, body.limit)
    return TopicMemorySearchResult(mode=outcome.mode, hits=[topic_hit_view(h) for h in outcome.hits])


@router.put(
    "/topic-memory/{artifact_id}",
    operation_id="revise_topic_memory",
    responses=errors(404, 409),
    summary="Write the next revision (compare-and-swap on expected_revision)",
)
def revise(scope_id: str, artifact_id: str, body: TopicMemoryRevise, store: FamilyStoreDep) -> TopicMemory:
    record = store.revise_topic(scope_id, artifact_id, body.expected_revision, body.title, body.body, body.tags)
    return topic_view(record)


@router.post(
    "/topic-memory/{artifact_id}/lifecycle",
    operation_id="change_topic_memory_lifecycle",
    responses=errors(404, 409),
    summary="Retire or restore a Topic Memory",
)
def lifecycle(scope_id: str, artifact_id: str, body: TopicMemoryLifecycle, store: FamilyStoreDep) -> TopicMemory:
    return topic_view(store.change_topic_lifecycle(scope_id, artifact_id, body.action, body.expected_revision))
