"""The review inbox: extracted Atomic Memory writes waiting for a decision (read grant to list, write to decide)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from powercontext.contract import sources as wire
from powercontext.contract.common import ArtifactAddress
from powercontext.domain.identity import ArtifactKey
from powercontext.server.routes.deps import RuntimeDep, errors, scope_router
from powercontext.server.routes.sources import source_store_of
from powercontext.store import source_records as records

router = scope_router("memory-candidates", "/memory-candidates")
policy_router = scope_router("memory-candidates", "/extraction-policy")


def _address(scope_id: str, artifact_id: str, revision: int) -> ArtifactAddress:
    return ArtifactKey(scope_id, "atomic-memory", artifact_id, revision).to_address()


def operation_view(scope_id: str, op: records.SourceOperation) -> wire.ExtractedOperation:
    """An extracted operation as the wire shows it (exact revisions as addresses)."""
    if isinstance(op, records.CreateMemory):
        return wire.ExtractedOperation(op="create", text=op.text, kind=op.kind, target=None, merged=None)
    if isinstance(op, records.MergeMemories):
        merged = [_address(scope_id, a, r) for a, r in op.sources]
        return wire.ExtractedOperation(op="merge", text=op.text, kind=op.kind, target=None, merged=merged)
    target = _address(scope_id, op.artifact_id, op.expected_revision)
    if isinstance(op, records.ReviseMemory):
        return wire.ExtractedOperation(op="revise", text=op.text, kind=None, target=target, merged=None)
    return wire.ExtractedOperation(op="forget", text=None, kind=None, target=target, merged=None)


def candidate_view(candidate: records.MemoryCandidate) -> wire.MemoryCandidate:
    operation = operation_view(candidate.scope_id, candidate.operation)
    return wire.MemoryCandidate(
        scope_id=candidate.scope_id,
        candidate_id=candidate.candidate_id,
        status=candidate.status,
        operation=operation,
        source_id=candidate.source_id,
        reject_reason=candidate.reject_reason,
        result=None if candidate.result is None else candidate.result.to_address(),
        created_at=candidate.created_at,
        updated_at=candidate.updated_at,
    )


@router.get("", responses=errors(501), summary="List extracted writes in the review inbox, newest first")
def list_memory_candidates(
    scope_id: str,
    runtime: RuntimeDep,
    status: records.CandidateState | None = "pending",
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=18, pattern=r"^[0-9]+$")] = None,
) -> wire.MemoryCandidateList:
    before = int(cursor) if cursor is not None else None
    rows = source_store_of(runtime).list_memory_candidates(scope_id, status, before, limit + 1)
    page = rows[:limit]
    next_cursor = str(page[-1][0]) if len(rows) > limit else None
    return wire.MemoryCandidateList(items=[candidate_view(c) for _, c in page], next_cursor=next_cursor)


@router.get("/{candidate_id}", responses=errors(501), summary="Read one extracted write and its decision")
def get_memory_candidate(scope_id: str, candidate_id: str, runtime: RuntimeDep) -> wire.MemoryCandidate:
    return candidate_view(source_store_of(runtime).read_memory_candidate(scope_id, candidate_id))


@router.post(
    "/{candidate_id}/approve",
    responses=errors(409, 410, 501),
    summary="Apply an extracted write, with its Source as lineage (409 when the memory changed since, 410 when its"
    " Source or memory was purged)",
)
def approve_memory_candidate(scope_id: str, candidate_id: str, runtime: RuntimeDep) -> wire.MemoryCandidate:
    source_store_of(runtime)
    return candidate_view(runtime.writes.approve_memory_candidate(scope_id, candidate_id))


@router.post("/{candidate_id}/reject", responses=errors(409, 501), summary="Reject an extracted write")
def reject_memory_candidate(
    scope_id: str, candidate_id: str, body: wire.MemoryCandidateReject, runtime: RuntimeDep
) -> wire.MemoryCandidate:
    source_store_of(runtime)
    return candidate_view(runtime.writes.reject_memory_candidate(scope_id, candidate_id, body.reason))


@policy_router.get("", responses=errors(501), summary="Whether extracted writes apply at once or wait for review")
def get_extraction_policy(scope_id: str, runtime: RuntimeDep) -> wire.ExtractionPolicyView:
    own = source_store_of(runtime).read_extraction_policy(scope_id)
    if own is not None:
        return wire.ExtractionPolicyView(explicit=own.explicit, model=own.model, origin="scope")
    worker = runtime.extraction
    policy = worker.policy_for(scope_id) if worker is not None else records.ExtractionPolicy("apply", "review")
    return wire.ExtractionPolicyView(explicit=policy.explicit, model=policy.model, origin="server")


@policy_router.put("", responses=errors(501), summary="Set this Scope's extraction policy")
def set_extraction_policy(
    scope_id: str, body: wire.ExtractionPolicyWrite, runtime: RuntimeDep
) -> wire.ExtractionPolicyView:
    source_store_of(runtime)
    policy = runtime.writes.set_extraction_policy(scope_id, records.ExtractionPolicy(body.explicit, body.model))
    return wire.ExtractionPolicyView(explicit=policy.explicit, model=policy.model, origin="scope")
