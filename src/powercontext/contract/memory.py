"""Atomic Memory wire models."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictBool, StrictFloat, StrictInt, field_validator

from powercontext.contract.common import (
    NO_SPACE,
    NON_BLANK,
    ArtifactAddress,
    ArtifactId,
    LifecycleState,
    MemoryKind,
    Revision,
    SearchModePolicy,
    StrictModel,
    utf8_bytes_schema,
)
from powercontext.contract.observed import ObservedAt
from powercontext.contract.sources import SourceRef

# The models a client returns or takes; importable from here, and the results also from ``powercontext``.
__all__ = [
    "AtomicMemory",
    "AtomicMemoryBatch",
    "AtomicMemoryBatchItem",
    "AtomicMemoryCreate",
    "AtomicMemoryCreated",
    "AtomicMemoryHit",
    "AtomicMemoryList",
    "AtomicMemorySearchResult",
    "MemoryListState",
]

MAX_BODY_BYTES = 8000
MAX_BATCH_ITEMS = 500

Tag = Annotated[str, Field(min_length=1, max_length=64, pattern=NO_SPACE)]
IdempotencyKey = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[\x21-\x7E]+$")]


def check_body(text: str) -> str:
    """Bodies are 1..8,000 UTF-8 bytes and not only whitespace."""
    size = len(text.encode("utf-8"))
    if size > MAX_BODY_BYTES:
        raise ValueError(f"text is {size} UTF-8 bytes; the limit is {MAX_BODY_BYTES}")
    if not text.strip():
        raise ValueError("text must contain a non-space character")
    return text


class _BodyModel(StrictModel):
    text: str = Field(
        min_length=1,
        pattern=NON_BLANK,
        description="UTF-8 text, 1..8000 bytes.",
        json_schema_extra=utf8_bytes_schema(MAX_BODY_BYTES),
    )

    @field_validator("text")
    @classmethod
    def _text_bytes(cls, value: str) -> str:
        return check_body(value)


class AtomicMemoryCreate(_BodyModel):
    kind: MemoryKind
    tags: list[Tag] = Field(default_factory=list, max_length=32)
    idempotency_key: IdempotencyKey | None = Field(
        default=None, description="Same key and same body return the first result; another body is a 409."
    )
    observed_at: ObservedAt | None = None


class AtomicMemoryBatchCreate(StrictModel):
    items: list[AtomicMemoryCreate] = Field(min_length=1, max_length=MAX_BATCH_ITEMS)


class AtomicMemoryRevise(_BodyModel):
    expected_revision: Revision = Field(description="The head revision the change is based on.")
    kind: MemoryKind | None = Field(default=None, description="Omit to keep the current kind.")
    tags: list[Tag] | None = Field(default=None, max_length=32, description="Omit to keep the current tags.")


class AtomicMemoryLifecycle(StrictModel):
    action: Literal["forget", "retire", "restore"]
    expected_revision: Revision | None = None


class PurgedArtifactView(StrictModel):
    """What a purge answers: the tombstone left in place of the erased text."""

    status: Literal["purged"] = "purged"
    scope_id: str
    family: Literal["atomic-memory", "topic-memory", "experience"]
    artifact_id: str
    revisions: StrictInt = Field(ge=1, description="How many revisions had their text erased.")
    purged_at: str


class MergeSource(StrictModel):
    artifact_id: ArtifactId
    revision: Revision


class AtomicMemoryMerge(_BodyModel):
    sources: list[MergeSource] = Field(min_length=2, max_length=50)
    kind: MemoryKind
    tags: list[Tag] = Field(default_factory=list, max_length=32)


class AtomicMemory(StrictModel):
    """One exact revision of an Atomic Memory, with the Artifact's current lifecycle state."""

    artifact_address: ArtifactAddress
    head_revision: StrictInt
    state: LifecycleState
    kind: MemoryKind
    text: str
    tags: list[str]
    created_at: str
    observed_at: str = Field(
        description="When this revision's statement was true (UTC): as given at create, else created_at."
    )
    merged_into: str | None = Field(description="Artifact id of the merge result, when state is merged.")
    merged_from: list[ArtifactAddress]
    source_refs: list[SourceRef] = Field(
        default_factory=list,
        description="The Sources this revision was written from (lineage; never their content). Filled by the "
        "exact reads; other answers leave it empty.",
    )


class AtomicMemoryCreated(AtomicMemory):
    """A single create's answer: the Atomic Memory, and the active ones it may replace."""

    possibly_supersedes: list[ArtifactId] = Field(
        description="Artifact ids of active Atomic Memories in this Scope, observed earlier, that cover the same "
        "subject (the ranking's supersession rule). A hint only: nothing is changed; retire them if replaced."
    )


class AtomicMemoryBatchItem(AtomicMemory):
    """One created (or replayed) Atomic Memory of a batch."""

    replayed: StrictBool = Field(
        description="True when this item's idempotency_key (with the same body) was already stored: the answer "
        "is the earlier Atomic Memory and nothing new was written."
    )


MemoryListState = Literal["active", "forgotten", "retired", "merged", "all"]


class AtomicMemoryList(StrictModel):
    items: list[AtomicMemory] = Field(description="Heads, newest first.")
    next_cursor: str | None = Field(description="Pass as ``cursor`` for the next page; null on the last page.")


class AtomicMemoryBatch(StrictModel):
    items: list[AtomicMemoryBatchItem] = Field(description="In request order.")


class AtomicMemorySearchRequest(StrictModel):
    query: str = Field(min_length=1, max_length=8192, pattern=NON_BLANK)
    mode: SearchModePolicy = "auto"
    limit: StrictInt = Field(default=10, ge=1, le=50)


class AtomicMemoryHit(StrictModel):
    artifact_address: ArtifactAddress
    kind: MemoryKind
    text: str
    tags: list[str]
    score: StrictFloat = Field(description="BM25 relevance; larger is better. Comparable within one response only.")


class AtomicMemorySearchResult(StrictModel):
    mode: Literal["fts", "vector", "hybrid"]
    fallback_reason: Literal["none", "inference_unavailable", "inference_timeout"]
    hits: list[AtomicMemoryHit]
