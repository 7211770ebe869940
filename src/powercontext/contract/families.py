"""Topic Memory, Experience and Profile wire models."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, Discriminator, Field, StrictFloat, StrictInt, Tag, model_validator

from powercontext.contract.common import (
    MAX_REVISION,
    NON_BLANK,
    ONE_LINE,
    ArtifactAddress,
    ArtifactId,
    LifecycleState,
    SearchModePolicy,
    StrictModel,
    utf8_bytes_schema,
)
from powercontext.contract.memory import AtomicMemory, IdempotencyKey
from powercontext.contract.memory import Tag as TagText
from powercontext.contract.prompts import PromptArtifact
from powercontext.contract.schema_rules import all_or_none_of, at_least_one_of

MAX_TOPIC_TITLE_CHARS = 200
MAX_TOPIC_BODY_BYTES = 16_000
MAX_EXPERIENCE_FIELD_BYTES = 4_000
MAX_PROFILE_KEY_CHARS = 100
MAX_PROFILE_VALUE_BYTES = 2_000
MAX_PROFILE_ENTRIES = 64
MAX_TAGS = 32
MAX_FAMILY_SEARCH_LIMIT = 20


def utf8_bounded(name: str, max_bytes: int) -> Callable[[str], str]:
    """A validator: 1..``max_bytes`` UTF-8 bytes and not only whitespace. Messages never quote the value."""

    def check(value: str) -> str:
        size = len(value.encode("utf-8"))
        if size > max_bytes:
            raise ValueError(f"{name} is {size} UTF-8 bytes; the limit is {max_bytes}")
        if not value.strip():
            raise ValueError(f"{name} must contain a non-space character")
        return value

    return check


def utf8_text(max_bytes: int) -> Any:
    """The schema of a non-blank text of 1..``max_bytes`` UTF-8 bytes (``utf8_bounded`` is its validator)."""
    return Field(
        min_length=1,
        pattern=NON_BLANK,
        description=f"UTF-8 text, 1..{max_bytes} bytes.",
        json_schema_extra=utf8_bytes_schema(max_bytes),
    )


def _one_line(value: str) -> str:
    # Rendered text puts titles and keys on one line; a control character there would break it.
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        raise ValueError("must be one line without control characters")
    if value != value.strip():
        raise ValueError("must not start or end with whitespace")
    return value


TopicTitle = Annotated[
    str,
    Field(min_length=1, max_length=MAX_TOPIC_TITLE_CHARS, pattern=ONE_LINE, description="One line, 1..200 chars."),
    AfterValidator(_one_line),
]
TopicBody = Annotated[str, utf8_text(MAX_TOPIC_BODY_BYTES), AfterValidator(utf8_bounded("body", MAX_TOPIC_BODY_BYTES))]
Tags = Annotated[list[TagText], Field(max_length=MAX_TAGS)]
SearchQuery = Annotated[str, Field(min_length=1, max_length=8192, pattern=NON_BLANK)]
# Strict integers (as everywhere on the wire): lax mode would take "1", 1.0 or true, which the schema forbids.
Revision = Annotated[StrictInt, Field(ge=1, le=MAX_REVISION)]
SearchLimit = Annotated[StrictInt, Field(ge=1, le=MAX_FAMILY_SEARCH_LIMIT)]


def _field(name: str) -> object:
    return AfterValidator(utf8_bounded(name, MAX_EXPERIENCE_FIELD_BYTES))


_FIELD_TEXT = utf8_text(MAX_EXPERIENCE_FIELD_BYTES)
Situation = Annotated[str, _FIELD_TEXT, _field("situation")]
WhatWorked = Annotated[str, _FIELD_TEXT, _field("what_worked")]
WhatToAvoid = Annotated[str, _FIELD_TEXT, _field("what_to_avoid")]
ReasonCode = Annotated[
    str, Field(min_length=1, max_length=64, pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$", examples=["duplicate"])
]

# -- Topic Memory ------------------------------------------------------------------------------


class TopicMemoryCreate(StrictModel):
    title: TopicTitle
    body: TopicBody
    tags: Tags = Field(default_factory=list)
    idempotency_key: IdempotencyKey | None = Field(
        default=None, description="Same key and same body return the first result; another body is a 409."
    )


class TopicMemoryRevise(StrictModel):
    model_config = StrictModel.model_config | {"json_schema_extra": at_least_one_of("title", "body", "tags")}

    expected_revision: Revision = Field(description="The head revision the change is based on.")
    title: TopicTitle | None = Field(default=None, description="Omit to keep the current title.")
    body: TopicBody | None = Field(default=None, description="Omit to keep the current body.")
    tags: Tags | None = Field(default=None, description="Omit to keep the current tags.")

    @model_validator(mode="after")
    def _changes_something(self) -> Self:
        if self.title is None and self.body is None and self.tags is None:
            raise ValueError("give at least one of title, body or tags")
        return self


class TopicMemoryLifecycle(StrictModel):
    action: Literal["retire", "restore"]
    expected_revision: Revision | None = None


class TopicMemory(StrictModel):
    """One exact revision of a Topic Memory, with the Artifact's current lifecycle state."""

    artifact_address: ArtifactAddress
    head_revision: StrictInt
    state: LifecycleState
    title: str
    body: str
    tags: list[str]
    created_at: str


class TopicMemorySearchRequest(StrictModel):
    query: SearchQuery
    mode: SearchModePolicy = "auto"
    limit: SearchLimit = 10


class TopicMemoryHit(StrictModel):
    artifact_address: ArtifactAddress
    title: str
    body: str
    tags: list[str]
    score: StrictFloat = Field(
        description="Relevance (BM25, cosine, or fused rank for hybrid); larger is better, within one response."
    )


class TopicMemorySearchResult(StrictModel):
    mode: Literal["fts", "vector", "hybrid"] = Field(description="The retrieval mode that actually ran.")
    fallback_reason: Literal["none", "inference_unavailable", "inference_timeout"]
    hits: list[TopicMemoryHit]


# -- Experience --------------------------------------------------------------------------------


class ExperienceProposal(StrictModel):
    """The proposed content of a Candidate."""

    model_config = StrictModel.model_config | {
        "json_schema_extra": all_or_none_of("target_artifact_id", "expected_revision")
    }

    situation: Situation
    what_worked: WhatWorked
    what_to_avoid: WhatToAvoid
    tags: Tags = Field(default_factory=list)
    target_artifact_id: ArtifactId | None = Field(
        default=None, description="An active Experience this proposal revises; omit to propose a new one."
    )
    expected_revision: Revision | None = Field(
        default=None, description="The target's head revision; required with target_artifact_id, else omitted."
    )

    @model_validator(mode="after")
    def _target_with_revision(self) -> Self:
        if (self.target_artifact_id is None) != (self.expected_revision is None):
            raise ValueError("target_artifact_id and expected_revision go together")
        return self


class ExperienceCandidateCreate(ExperienceProposal):
    """A proposed lesson. It enters the store as a pending Candidate, never directly as an Experience."""


class ApproveDecision(StrictModel):
    decision: Literal["approve"]
    expected_candidate_revision: Revision | None = None


class RejectDecision(StrictModel):
    decision: Literal["reject"]
    reason: ReasonCode | None = Field(default=None, description="A short kebab-case reason code.")
    expected_candidate_revision: Revision | None = None


class ReviseDecision(ExperienceProposal):
    """Replaces every proposed field (an omitted target means a new Experience); the Candidate stays pending."""

    decision: Literal["revise"]
    expected_candidate_revision: Revision


ExperienceReview = Annotated[ApproveDecision | RejectDecision | ReviseDecision, Field(discriminator="decision")]


class ExperienceCandidate(StrictModel):
    scope_id: str
    candidate_id: str
    candidate_revision: StrictInt = Field(description="Starts at 1; each revise decision adds one.")
    status: Literal["pending", "approved", "rejected"]
    situation: str
    what_worked: str
    what_to_avoid: str
    tags: list[str]
    target_artifact_id: str | None
    expected_revision: StrictInt | None
    reject_reason: str | None
    result_address: ArtifactAddress | None = Field(description="The Experience revision an approval created.")
    created_at: str
    updated_at: str


class Experience(StrictModel):
    """One exact, immutable Experience revision, with the Artifact's current lifecycle state."""

    artifact_address: ArtifactAddress
    head_revision: StrictInt
    state: LifecycleState
    situation: str
    what_worked: str
    what_to_avoid: str
    tags: list[str]
    created_at: str
    candidate_id: str = Field(description="The approved Candidate this revision came from.")


class ExperienceReviewResult(StrictModel):
    candidate: ExperienceCandidate
    experience: Experience | None = Field(description="The approved revision; null for reject and revise.")


class ExperienceLifecycle(StrictModel):
    action: Literal["retire"]
    expected_revision: Revision | None = None


class ExperienceSearchRequest(StrictModel):
    query: SearchQuery
    limit: SearchLimit = 10


class ExperienceHit(StrictModel):
    artifact_address: ArtifactAddress
    situation: str
    what_worked: str
    what_to_avoid: str
    tags: list[str]
    score: StrictFloat = Field(description="BM25 relevance; larger is better. Comparable within one response.")


class ExperienceSearchResult(StrictModel):
    mode: Literal["fts"] = Field(description="The retrieval mode that actually ran.")
    hits: list[ExperienceHit]


# -- Profile -----------------------------------------------------------------------------------


class ProfileEntry(StrictModel):
    key: Annotated[
        str, Field(min_length=1, max_length=MAX_PROFILE_KEY_CHARS, pattern=ONE_LINE), AfterValidator(_one_line)
    ]
    value: Annotated[
        str, utf8_text(MAX_PROFILE_VALUE_BYTES), AfterValidator(utf8_bounded("value", MAX_PROFILE_VALUE_BYTES))
    ]


def _unique_keys(entries: list[ProfileEntry]) -> list[ProfileEntry]:
    if len({e.key for e in entries}) != len(entries):
        raise ValueError("each key may appear only once")
    return entries


class ProfileCommit(StrictModel):
    entries: Annotated[
        list[ProfileEntry],
        Field(min_length=1, max_length=MAX_PROFILE_ENTRIES, description="The whole Profile, in order."),
        AfterValidator(_unique_keys),
    ]
    expected_revision: StrictInt | None = Field(
        default=None,
        strict=True,
        ge=0,
        le=MAX_REVISION,
        description="The committed head this snapshot replaces; 0 or omitted for the first commit.",
    )


class Profile(StrictModel):
    """One committed Profile snapshot."""

    artifact_address: ArtifactAddress
    head_revision: StrictInt
    entries: list[ProfileEntry]
    created_at: str


# -- generic exact reads -----------------------------------------------------------------------


def _family_of(value: Any) -> str | None:
    # The family sits inside the address, so Atomic Memory's existing shape needs no new field.
    if isinstance(value, dict):
        address = value.get("artifact_address")
        artifact = address.get("artifact") if isinstance(address, dict) else None
        family = artifact.get("family") if isinstance(artifact, dict) else None
        return family if isinstance(family, str) else None
    address = getattr(value, "artifact_address", None)
    return None if address is None else str(address.artifact.family)


ArtifactView = Annotated[
    Annotated[AtomicMemory, Tag("atomic-memory")]
    | Annotated[TopicMemory, Tag("topic-memory")]
    | Annotated[Experience, Tag("experience")]
    | Annotated[Profile, Tag("profile")]
    | Annotated[PromptArtifact, Tag("prompt")],
    Discriminator(_family_of),
]
"""Any family's exact revision, told apart by ``artifact_address.artifact.family``."""
