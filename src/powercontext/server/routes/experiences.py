"""Experience: Candidates and their review, retirement, and search (exact reads are in ``artifacts``)."""

from __future__ import annotations

from powercontext.contract.families import (
    ApproveDecision,
    Experience,
    ExperienceCandidate,
    ExperienceCandidateCreate,
    ExperienceLifecycle,
    ExperienceReview,
    ExperienceReviewResult,
    ExperienceSearchRequest,
    ExperienceSearchResult,
    RejectDecision,
)
from powercontext.contract.memory import PurgedArtifactView
from powercontext.search.families import ExperienceSearch
from powercontext.server.family_mapping import candidate_view, experience_draft, experience_hit_view, experience_view
from powercontext.server.mapping import purged_view
from powercontext.server.routes.deps import FamilyStoreDep, RuntimeDep, errors, scope_router

router = scope_router("experience", "/experience")


@router.post(
    "/candidates",
    status_code=201,
    responses=errors(409),
    summary="Propose an Experience: it waits, pending, for review",
)
def create_experience_candidate(
    scope_id: str, body: ExperienceCandidateCreate, runtime: RuntimeDep, store: FamilyStoreDep
) -> ExperienceCandidate:
    return candidate_view(runtime.writes.propose_experience(scope_id, experience_draft(body)))


@router.get("/candidates/{candidate_id}", summary="Read a Candidate and its review outcome")
def get_experience_candidate(scope_id: str, candidate_id: str, store: FamilyStoreDep) -> ExperienceCandidate:
    return candidate_view(store.read_candidate(scope_id, candidate_id))


@router.post(
    "/candidates/{candidate_id}/review", responses=errors(409), summary="Approve, reject or revise a pending Candidate"
)
def review_experience_candidate(
    scope_id: str, candidate_id: str, body: ExperienceReview, runtime: RuntimeDep, store: FamilyStoreDep
) -> ExperienceReviewResult:
    writes = runtime.writes
    if isinstance(body, ApproveDecision):
        candidate, experience = writes.approve_candidate(scope_id, candidate_id, body.expected_candidate_revision)
        return ExperienceReviewResult(candidate=candidate_view(candidate), experience=experience_view(experience))
    if isinstance(body, RejectDecision):
        rejected = writes.reject_candidate(scope_id, candidate_id, body.expected_candidate_revision, body.reason)
        return ExperienceReviewResult(candidate=candidate_view(rejected), experience=None)
    draft = experience_draft(body)
    revised = writes.revise_candidate(scope_id, candidate_id, body.expected_candidate_revision, draft)
    return ExperienceReviewResult(candidate=candidate_view(revised), experience=None)


@router.post("/search", summary="Full-text search over active Experience heads")
def search_experience(
    scope_id: str, body: ExperienceSearchRequest, runtime: RuntimeDep, store: FamilyStoreDep
) -> ExperienceSearchResult:
    runtime.store.get_scope(scope_id)
    outcome = ExperienceSearch(store).search(scope_id, body.query, body.limit)
    return ExperienceSearchResult(mode=outcome.mode, hits=[experience_hit_view(h) for h in outcome.hits])


@router.post(
    "/{artifact_id}/lifecycle",
    responses=errors(409),
    summary="Retire an Experience (its revisions stay readable exactly)",
)
def change_experience_lifecycle(
    scope_id: str, artifact_id: str, body: ExperienceLifecycle, runtime: RuntimeDep, store: FamilyStoreDep
) -> Experience:
    return experience_view(
        runtime.writes.change_experience_lifecycle(scope_id, artifact_id, body.action, body.expected_revision)
    )


@router.post(
    "/{artifact_id}/purge",
    responses=errors(410),
    summary="Erase every revision of an Experience and remove it from every index (real deletion)",
)
def purge_experience(scope_id: str, artifact_id: str, runtime: RuntimeDep) -> PurgedArtifactView:
    """Irreversible; exact reads then answer ``410 purged``. Needs the ``write`` grant (docs/operations.md)."""
    return purged_view(runtime.writes.purge_artifact(scope_id, "experience", artifact_id))
