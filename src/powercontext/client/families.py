"""Client methods for Topic Memory, Experience and Profile (mixed into ``PowerContextClient``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import quote

from pydantic import BaseModel

from powercontext.client.checks import ProfileEntries, checked_input, profile_entries

if TYPE_CHECKING:
    from powercontext.contract.families import (
        ApproveDecision,
        Experience,
        ExperienceCandidate,
        ExperienceReviewResult,
        ExperienceSearchResult,
        Profile,
        RejectDecision,
        ReviseDecision,
        TopicMemory,
        TopicMemorySearchResult,
    )


M = TypeVar("M", bound=BaseModel)


def _path(scope_id: str, *parts: str) -> str:
    segments = [quote(p, safe=":@+=~.-_") for p in (scope_id, *parts)]
    return "/v1/scopes/" + "/".join(segments)


def _wire(model: BaseModel) -> dict[str, Any]:
    return model.model_dump(mode="json", exclude_none=True)


def _artifact_path(scope_id: str, family: str, artifact_id: str, revision: int | None) -> str:
    path = _path(scope_id, "artifacts", family, artifact_id)
    return path if revision is None else f"{path}/revisions/{revision}"


class FamilyClientMixin:
    """Async methods, one per family operation. Bodies are validated locally before they are sent."""

    if TYPE_CHECKING:

        async def _call(self, method: str, path: str, model: type[M], json: Any = None) -> M: ...

    # -- topic memory ----------------------------------------------------------------------------

    async def create_topic(
        self,
        scope_id: str,
        title: str,
        body: str,
        tags: Sequence[str] = (),
        idempotency_key: str | None = None,
    ) -> TopicMemory:
        """Create a Topic Memory: a titled body of what is known about one subject."""
        from powercontext.contract.families import TopicMemory, TopicMemoryCreate
        with checked_input():
            item = TopicMemoryCreate(title=title, body=body, tags=list(tags), idempotency_key=idempotency_key)
        return await self._call("POST", _path(scope_id, "topic-memory"), TopicMemory, _wire(item))

    async def revise_topic(
        self,
        scope_id: str,
        artifact_id: str,
        expected_revision: int,
        title: str | None = None,
        body: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> TopicMemory:
        """Write the next revision; omitted fields keep their current value."""
        from powercontext.contract.families import TopicMemory
        wire: dict[str, Any] = {"expected_revision": expected_revision}
        for name, value in (("title", title), ("body", body), ("tags", None if tags is None else list(tags))):
            if value is not None:
                wire[name] = value
        return await self._call("PUT", _path(scope_id, "topic-memory", artifact_id), TopicMemory, wire)

    async def change_topic_lifecycle(
        self,
        scope_id: str,
        artifact_id: str,
        action: Literal["retire", "restore"],
        expected_revision: int | None = None,
    ) -> TopicMemory:
        """Retire or restore a Topic Memory (with ``expected_revision``, only if the head is still that one)."""
        from powercontext.contract.families import TopicMemory
        wire: dict[str, Any] = {"action": action}
        if expected_revision is not None:
            wire["expected_revision"] = expected_revision
        path = _path(scope_id, "topic-memory", artifact_id, "lifecycle")
        return await self._call("POST", path, TopicMemory, wire)

    async def get_topic(self, scope_id: str, artifact_id: str, revision: int | None = None) -> TopicMemory:
        """The head, or with ``revision`` that exact immutable revision (readable after retire)."""
        from powercontext.contract.families import TopicMemory
        return await self._call("GET", _artifact_path(scope_id, "topic-memory", artifact_id, revision), TopicMemory)

    async def search_topics(self, scope_id: str, query: str, limit: int = 10) -> TopicMemorySearchResult:
        """Search the active Topic Memory heads of a Scope."""
        from powercontext.contract.families import TopicMemorySearchResult
        wire = {"query": query, "limit": limit}
        return await self._call("POST", _path(scope_id, "topic-memory", "search"), TopicMemorySearchResult, wire)

    # -- experience ------------------------------------------------------------------------------

    async def propose_experience(
        self,
        scope_id: str,
        situation: str,
        what_worked: str,
        what_to_avoid: str,
        tags: Sequence[str] = (),
        target_artifact_id: str | None = None,
        expected_revision: int | None = None,
    ) -> ExperienceCandidate:
        """Create a pending Candidate; with a target it proposes the next revision of that Experience."""
        from powercontext.contract.families import ExperienceCandidate, ExperienceCandidateCreate
        with checked_input():
            item = ExperienceCandidateCreate(
                situation=situation,
                what_worked=what_worked,
                what_to_avoid=what_to_avoid,
                tags=list(tags),
                target_artifact_id=target_artifact_id,
                expected_revision=expected_revision,
            )
        path = _path(scope_id, "experience", "candidates")
        return await self._call("POST", path, ExperienceCandidate, _wire(item))

    async def get_candidate(self, scope_id: str, candidate_id: str) -> ExperienceCandidate:
        """A Candidate and its review outcome, if reviewed."""
        from powercontext.contract.families import ExperienceCandidate
        path = _path(scope_id, "experience", "candidates", candidate_id)
        return await self._call("GET", path, ExperienceCandidate)

    async def review_candidate(
        self, scope_id: str, candidate_id: str, decision: ApproveDecision | RejectDecision | ReviseDecision
    ) -> ExperienceReviewResult:
        """Approve, reject or revise a pending Candidate (``approve_candidate`` and ``reject_candidate`` are
        the short forms)."""
        from powercontext.contract.families import ExperienceReviewResult
        path = _path(scope_id, "experience", "candidates", candidate_id, "review")
        return await self._call("POST", path, ExperienceReviewResult, _wire(decision))

    async def approve_candidate(
        self, scope_id: str, candidate_id: str, expected_candidate_revision: int | None = None
    ) -> ExperienceReviewResult:
        """Approve a pending Candidate: it becomes an Experience (or that Experience's next revision)."""
        from powercontext.contract.families import ApproveDecision
        with checked_input():
            decision = ApproveDecision(decision="approve", expected_candidate_revision=expected_candidate_revision)
        return await self.review_candidate(scope_id, candidate_id, decision)

    async def reject_candidate(
        self,
        scope_id: str,
        candidate_id: str,
        reason: str | None = None,
        expected_candidate_revision: int | None = None,
    ) -> ExperienceReviewResult:
        """Reject a pending Candidate; ``reason`` is a short kebab-case code."""
        from powercontext.contract.families import RejectDecision
        with checked_input():
            decision = RejectDecision(
                decision="reject", reason=reason, expected_candidate_revision=expected_candidate_revision
            )
        return await self.review_candidate(scope_id, candidate_id, decision)

    async def retire_experience(
        self, scope_id: str, artifact_id: str, expected_revision: int | None = None
    ) -> Experience:
        """Retire an Experience; its revisions stay readable exactly."""
        from powercontext.contract.families import Experience
        wire: dict[str, Any] = {"action": "retire"}
        if expected_revision is not None:
            wire["expected_revision"] = expected_revision
        return await self._call("POST", _path(scope_id, "experience", artifact_id, "lifecycle"), Experience, wire)

    async def get_experience(self, scope_id: str, artifact_id: str, revision: int | None = None) -> Experience:
        """The head, or with ``revision`` that exact immutable revision (readable after retire)."""
        from powercontext.contract.families import Experience
        return await self._call("GET", _artifact_path(scope_id, "experience", artifact_id, revision), Experience)

    async def search_experiences(self, scope_id: str, query: str, limit: int = 10) -> ExperienceSearchResult:
        """Search the active Experiences of a Scope."""
        from powercontext.contract.families import ExperienceSearchResult
        wire = {"query": query, "limit": limit}
        return await self._call("POST", _path(scope_id, "experience", "search"), ExperienceSearchResult, wire)

    # -- profile ---------------------------------------------------------------------------------

    async def set_profile(self, scope_id: str, entries: ProfileEntries, expected_revision: int = 0) -> Profile:
        """Commit the whole Profile as the next snapshot: ``entries`` is a mapping (``{"tz": "UTC"}``) or an
        iterable of ``(key, value)`` pairs, in order; anything else is ``InvalidRequest``. ``expected_revision``
        is the head (0 for the first)."""
        from powercontext.contract.families import Profile, ProfileCommit
        wire = {"entries": profile_entries(entries), "expected_revision": expected_revision}
        with checked_input():
            commit = ProfileCommit.model_validate(wire)
        return await self._call("PUT", _path(scope_id, "profile"), Profile, _wire(commit))

    async def get_profile(self, scope_id: str, revision: int | None = None) -> Profile:
        """The committed head, or with ``revision`` that exact snapshot."""
        from powercontext.contract.families import Profile
        if revision is None:
            return await self._call("GET", _path(scope_id, "profile"), Profile)
        return await self._call("GET", _artifact_path(scope_id, "profile", "profile", revision), Profile)
