"""Sources in the store: what a capture records, what the extraction worker claims and applies, and the port.

A Source is exact, immutable evidence (its content is stored redacted, once); only its extraction state moves:
``pending`` → ``done`` (operations applied, in one transaction with the state change), ``skipped`` (nothing to
extract), or ``failed`` (given up after too many attempts). A pending Source is claimed with a lease; the worker
that holds it applies the operations, and a worker whose lease expired (or was taken over) applies nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from powercontext.domain.identity import ArtifactKey
from powercontext.store.base import Embedding

SourceKind = Literal["prompt", "reply", "transcript", "note", "document"]
ExtractionStatus = Literal["pending", "done", "failed", "skipped"]
# A pending Source's reason when only a model can extract it: claimed again only once a model is configured.
WAITING_FOR_MODEL = "waiting-for-model"
# A purged Source's reason: its content (and digest) erased; what it wrote keeps its lineage by identity.
PURGED = "purged"


@dataclass(frozen=True, slots=True)
class SourceOrigin:
    """Where a captured Source came from: the host, its session, the turn within it."""

    host: str | None = None
    session_id: str | None = None
    turn: int | None = None


@dataclass(frozen=True, slots=True)
class NewSource:
    kind: SourceKind
    content: str  # already redacted
    content_digest: str  # sha256 of the stored (redacted) content
    redactions: tuple[tuple[str, int], ...]  # (detector type, how many) replaced before storing
    origin: SourceOrigin
    observed_at: str | None = None  # canonical UTC; None: when it is recorded
    status: ExtractionStatus = "pending"
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class SourceRef:
    """A Source as lineage names it: its identity and where and when it was observed (never its content)."""

    scope_id: str
    source_id: str
    kind: SourceKind
    observed_at: str
    origin: SourceOrigin


@dataclass(frozen=True, slots=True)
class SourceRecord:
    ref: SourceRef
    content: str
    content_digest: str
    redactions: tuple[tuple[str, int], ...]
    created_at: str
    status: ExtractionStatus
    reason: str | None
    attempts: int
    writes: tuple[ArtifactKey, ...]  # the exact revisions written from this Source, in write order


@dataclass(frozen=True, slots=True)
class CreateMemory:
    text: str
    kind: str
    tags: tuple[str, ...] = ()
    embedding: Embedding | None = None


@dataclass(frozen=True, slots=True)
class ReviseMemory:
    artifact_id: str
    expected_revision: int
    text: str
    embedding: Embedding | None = None


@dataclass(frozen=True, slots=True)
class ForgetMemory:
    artifact_id: str
    expected_revision: int


@dataclass(frozen=True, slots=True)
class MergeMemories:
    """Exact active revisions ``(artifact_id, revision)`` the model merged into one new statement."""

    sources: tuple[tuple[str, int], ...]
    text: str
    kind: str
    embedding: Embedding | None = None


SourceOperation = CreateMemory | ReviseMemory | ForgetMemory | MergeMemories
# The operations that write a new statement (whose embedding is computed before the transaction).
WRITES_TEXT = (CreateMemory, ReviseMemory, MergeMemories)


@dataclass(frozen=True, slots=True)
class ClaimedSource:
    """A pending Source this worker holds the lease of, until ``lease_until``."""

    record: SourceRecord
    lease_owner: str
    lease_until: str


CandidateState = Literal["pending", "approved", "rejected"]
PolicyChoice = Literal["apply", "review"]


@dataclass(frozen=True, slots=True)
class ExtractionPolicy:
    """Whether a Scope's extracted writes apply at once or wait in the review inbox, by extractor."""

    explicit: PolicyChoice
    model: PolicyChoice

    def choice(self, model_backed: bool) -> PolicyChoice:
        return self.model if model_backed else self.explicit


IN_REVIEW = "in-review"  # a done Source's reason while its extracted operations wait in the review inbox


@dataclass(frozen=True, slots=True)
class MemoryCandidate:
    """One extracted operation waiting in the review inbox (or decided): applied with its Source as lineage."""

    scope_id: str
    candidate_id: str
    status: CandidateState
    operation: SourceOperation
    source_id: str
    reject_reason: str | None
    result: ArtifactKey | None
    created_at: str
    updated_at: str
    purged: bool = False  # its Source, or a memory it names, was purged: text erased, it cannot be approved


@runtime_checkable
class SourceStore(Protocol):
    """Sources and their lineage. Same transaction and read rules as ``Store``."""

    def create_source(self, scope_id: str, source: NewSource) -> SourceRecord: ...
    def read_source(self, scope_id: str, source_id: str) -> SourceRecord: ...
    def list_sources(self, scope_id: str, before: int | None, limit: int) -> list[tuple[int, SourceRecord]]:
        """Newest first, each with its position (pass the last one as ``before`` for the next page)."""
        ...

    def claim_sources(self, owner: str, lease_s: float, limit: int, with_model: bool) -> list[ClaimedSource]:
        """Lease up to ``limit`` pending Sources due now whose lease is free or expired (oldest first); without
        a model, those waiting for one are left alone. Each claim counts an attempt."""
        ...

    def finish_source(
        self, claim: ClaimedSource, operations: Sequence[SourceOperation], status: ExtractionStatus
    ) -> SourceRecord:
        """Apply ``operations`` with the Source as lineage, and set ``status``, in one transaction; refused
        (``SourceLeaseLost``) when the claim's lease is no longer this worker's."""
        ...

    def defer_source(self, claim: ClaimedSource, reason: str, retry_at: str | None, give_up: bool) -> SourceRecord:
        """Release the lease and leave the Source pending with ``reason`` (due again at ``retry_at``; None: once
        a model is configured), or mark it ``failed`` when ``give_up``."""
        ...

    def pending_sources(self) -> dict[str, int]:
        """Pending Sources per Scope."""
        ...

    def source_refs(self, keys: Sequence[ArtifactKey]) -> dict[ArtifactKey, tuple[SourceRef, ...]]:
        """The lineage of these exact revisions (those that have any)."""
        ...

    def propose_source(self, claim: ClaimedSource, operations: Sequence[SourceOperation]) -> SourceRecord:
        """Put ``operations`` in the review inbox as Candidates and mark the Source done (``in-review``), in one
        transaction, fenced like ``finish_source``."""
        ...

    def list_memory_candidates(
        self, scope_id: str, status: CandidateState | None, before: int | None, limit: int
    ) -> list[tuple[int, MemoryCandidate]]: ...
    def read_memory_candidate(self, scope_id: str, candidate_id: str) -> MemoryCandidate: ...
    def approve_memory_candidate(
        self, scope_id: str, candidate_id: str, embedding: Embedding | None
    ) -> MemoryCandidate:
        """Apply a pending Candidate's operation with its Source as lineage (compare-and-swap as extracted)."""
        ...

    def reject_memory_candidate(self, scope_id: str, candidate_id: str, reason: str | None) -> MemoryCandidate: ...
    def read_extraction_policy(self, scope_id: str) -> ExtractionPolicy | None:
        """The Scope's own policy; None when it has none (the Server's default applies)."""
        ...

    def set_extraction_policy(self, scope_id: str, policy: ExtractionPolicy) -> ExtractionPolicy: ...
    def purge_source(self, scope_id: str, source_id: str) -> SourceRecord:
        """Erase a Source's content and digest for good (a pending one is never extracted); the exact read then
        answers ``410 purged``. A second purge answers the same record."""
        ...
