"""Family store records to wire models, and wire requests to store inputs."""

from __future__ import annotations

from powercontext.contract.families import (
    Experience,
    ExperienceCandidate,
    ExperienceHit,
    ExperienceProposal,
    Profile,
    TopicMemory,
    TopicMemoryCreate,
    TopicMemoryHit,
)
from powercontext.contract.families import ProfileEntry as WireProfileEntry
from powercontext.server.mapping import head_fields, request_digest
from powercontext.store.base import (
    CandidateRecord,
    ExperienceContent,
    ExperienceDraft,
    ExperienceRecord,
    NewTopic,
    ProfileEntry,
    ProfileRecord,
    ScoredExperience,
    ScoredTopic,
    TopicRecord,
)


def topic_view(record: TopicRecord) -> TopicMemory:
    return TopicMemory(
        **head_fields(record),
        title=record.title,
        body=record.body,
        tags=list(record.tags),
        created_at=record.created_at,
    )


def topic_hit_view(hit: ScoredTopic) -> TopicMemoryHit:
    r = hit.record
    return TopicMemoryHit(
        artifact_address=r.key.to_address(), title=r.title, body=r.body, tags=list(r.tags), score=hit.score
    )


def new_topic(item: TopicMemoryCreate) -> NewTopic:
    return NewTopic(item.title, item.body, tuple(item.tags), item.idempotency_key, request_digest(item))


def experience_view(record: ExperienceRecord) -> Experience:
    return Experience(
        **head_fields(record),
        **record.content.fields(),
        tags=list(record.tags),
        created_at=record.created_at,
        candidate_id=record.candidate_id,
    )


def experience_hit_view(hit: ScoredExperience) -> ExperienceHit:
    r = hit.record
    return ExperienceHit(artifact_address=r.key.to_address(), **r.content.fields(), tags=list(r.tags), score=hit.score)


def candidate_view(record: CandidateRecord) -> ExperienceCandidate:
    d = record.draft
    return ExperienceCandidate(
        scope_id=record.scope_id,
        candidate_id=record.candidate_id,
        candidate_revision=record.candidate_revision,
        status=record.status,
        **d.content.fields(),
        tags=list(d.tags),
        target_artifact_id=d.target_artifact_id,
        expected_revision=d.expected_revision,
        reject_reason=record.reject_reason,
        result_address=None if record.result is None else record.result.to_address(),
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


def experience_draft(body: ExperienceProposal) -> ExperienceDraft:
    """The store draft of a proposal (a new Candidate or a revise decision)."""
    content = ExperienceContent(body.situation, body.what_worked, body.what_to_avoid)
    return ExperienceDraft(content, tuple(body.tags), body.target_artifact_id, body.expected_revision)


def profile_view(record: ProfileRecord) -> Profile:
    return Profile(
        artifact_address=record.key.to_address(),
        head_revision=record.head_revision,
        entries=[WireProfileEntry(key=e.key, value=e.value) for e in record.entries],
        created_at=record.created_at,
    )


def profile_entries(entries: list[WireProfileEntry]) -> list[ProfileEntry]:
    return [ProfileEntry(e.key, e.value) for e in entries]
