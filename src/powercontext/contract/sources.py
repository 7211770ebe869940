"""Source wire models: captured evidence (a prompt, a reply, a transcript, a note, a document) and its extraction."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StrictInt, field_validator

from powercontext.contract.common import NON_BLANK, ArtifactAddress, StrictModel, utf8_bytes_schema
from powercontext.contract.observed import ObservedAt

__all__ = [
    "MemoryCandidate",
    "MemoryCandidateList",
    "Source",
    "SourceCreate",
    "SourceCreated",
    "SourceList",
    "SourceOrigin",
    "SourceRef",
]

# A Source is one turn or one document, not a repository: larger content is refused, never truncated.
MAX_SOURCE_BYTES = 64 * 1024

SourceKind = Literal["prompt", "reply", "transcript", "note", "document"]
ExtractionStatus = Literal["pending", "done", "failed", "skipped"]
OriginText = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[\x21-\x7E]+$")]


class SourceOrigin(StrictModel):
    """Where a Source was captured: the host (``claude-code``, ``codex``, …), its session and the turn."""

    host: OriginText | None = None
    session_id: OriginText | None = None
    turn: Annotated[StrictInt, Field(ge=0, le=2**31 - 1)] | None = None


class SourceCreate(StrictModel):
    kind: SourceKind
    content: str = Field(
        min_length=1,
        pattern=NON_BLANK,
        description="UTF-8 text, 1..65536 bytes. What looks like a secret is redacted before it is stored.",
        json_schema_extra=utf8_bytes_schema(MAX_SOURCE_BYTES),
    )
    observed_at: ObservedAt | None = Field(default=None, description="When it was said; default: when recorded.")
    origin: SourceOrigin = Field(default_factory=SourceOrigin)

    @field_validator("content")
    @classmethod
    def _content_bytes(cls, value: str) -> str:
        size = len(value.encode("utf-8"))
        if size > MAX_SOURCE_BYTES:
            raise ValueError(f"content is {size} UTF-8 bytes; the limit is {MAX_SOURCE_BYTES}")
        return value


class Redaction(StrictModel):
    type: str = Field(description="The secret detector's type name, e.g. 'AWS Access Key'.")
    count: StrictInt


class Extraction(StrictModel):
    status: ExtractionStatus
    reason: str | None = Field(
        description="Why a Source is still pending or failed ('waiting-for-model', a provider error code, …)."
    )
    attempts: StrictInt
    writes: list[ArtifactAddress] = Field(description="The exact Atomic Memory revisions written from this Source.")


class SourceRef(StrictModel):
    """A Source as lineage names it: identity, kind, when and where it was observed; never its content."""

    scope_id: str
    source_id: str
    kind: SourceKind
    observed_at: str
    origin: SourceOrigin


class SourceCreated(SourceRef):
    content_digest: str = Field(description="sha256 of the stored (redacted) content.")
    redactions: list[Redaction]
    extraction: Extraction


class Source(SourceCreated):
    """The exact read: the stored content (redacted), its digest, origin and extraction."""

    content: str
    created_at: str


class SourceList(StrictModel):
    items: list[SourceCreated] = Field(description="Newest first; content only in the exact read.")
    next_cursor: str | None


CandidateStatus = Literal["pending", "approved", "rejected"]


class ExtractedOperation(StrictModel):
    op: Literal["create", "revise", "forget", "merge"]
    text: str | None = Field(description="The memory's statement (create, revise, merge).")
    kind: str | None = Field(description="create, merge.")
    target: ArtifactAddress | None = Field(description="revise, forget: the exact revision the model was shown.")
    merged: list[ArtifactAddress] | None = Field(
        description="merge: the exact revisions the model was shown, replaced by one new memory."
    )


class MemoryCandidate(StrictModel):
    """An extracted write waiting in the review inbox, or decided."""

    scope_id: str
    candidate_id: str
    status: CandidateStatus
    operation: ExtractedOperation
    source_id: str = Field(description="The Source it was extracted from (read it for the exact words).")
    reject_reason: str | None
    result: ArtifactAddress | None = Field(description="approved: the revision written (null for a forget).")
    created_at: str
    updated_at: str


class MemoryCandidateList(StrictModel):
    items: list[MemoryCandidate] = Field(description="Newest first.")
    next_cursor: str | None


class MemoryCandidateReject(StrictModel):
    reason: Annotated[str, Field(min_length=1, max_length=1000)] | None = None


class ExtractionPolicyWrite(StrictModel):
    explicit: Literal["apply", "review"] = Field(description="Writes extracted from explicit statements.")
    model: Literal["apply", "review"] = Field(description="Writes a generation model extracted.")


class ExtractionPolicyView(ExtractionPolicyWrite):
    origin: Literal["scope", "server"] = Field(
        description="scope: this Scope's own policy; server: the Server's default (POWERCONTEXT_EXTRACTION_REVIEW)."
    )
