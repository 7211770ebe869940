"""The storage protocol every backend implements, and the records it returns."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt

from powercontext.contract.common import ArtifactFamily
from powercontext.domain.families import CandidateStatus, ExperienceAction, TopicAction
from powercontext.domain.identity import ArtifactKey
from powercontext.domain.lifecycle import LifecycleAction

# The Prompt records live in their own module; importing them from here keeps working.
from powercontext.store.prompt_records import PROMPT_SCHEMA_VERSION as PROMPT_SCHEMA_VERSION
from powercontext.store.prompt_records import JsonValue as JsonValue
from powercontext.store.prompt_records import PromptContent as PromptContent
from powercontext.store.prompt_records import PromptDemonstration as PromptDemonstration
from powercontext.store.prompt_records import PromptMode as PromptMode
from powercontext.store.prompt_records import PromptRecord as PromptRecord
from powercontext.store.prompt_records import PromptStore as PromptStore
from powercontext.store.removal import DeletedScope, PurgedArtifact


@dataclass(frozen=True, slots=True)
class ScopeRecord:
    scope_id: str
    title: str
    context_references: tuple[str, ...]
    created_at: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class ScopeEdit:
    """A Scope's new title and references: both replace the current ones."""

    title: str
    context_references: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Embedding:
    """A unit vector and the model that made it; vectors of different models are never compared."""

    model_id: str
    vector: npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class NewMemory:
    text: str
    kind: str
    tags: tuple[str, ...]
    idempotency_key: str | None = None
    # Digest of the request body without the key: same key + same digest replays, else conflicts.
    request_digest: str = ""
    embedding: Embedding | None = None
    observed_at: str | None = None  # canonical UTC; None: when it is recorded


@dataclass(frozen=True, slots=True)
class MemoryEdit:
    """The next revision of an Atomic Memory: new text; a ``kind`` or ``tags`` of None keeps the head's."""

    text: str
    kind: str | None = None
    tags: tuple[str, ...] | None = None
    embedding: Embedding | None = None  # of the new text; None: the revision has none
    observed_at: str | None = None  # canonical UTC; None: when it is recorded


@dataclass(frozen=True, slots=True)
class MemoryMerge:
    """Exact active revisions ``(artifact_id, revision)`` to merge, and the new Atomic Memory that replaces them."""

    sources: tuple[tuple[str, int], ...]
    text: str
    kind: str
    tags: tuple[str, ...]
    embedding: Embedding | None = None
    observed_at: str | None = None  # canonical UTC; None: when it is written (an extracted merge: its Source's)


@dataclass(frozen=True, slots=True)
class EmbeddingTask:
    """An active head whose embedding is missing or was made by another model."""

    rowid: int
    key: ArtifactKey
    text: str


@dataclass(frozen=True, slots=True)
class EmbeddingStatus:
    active_heads: int
    current_model: int  # active heads embedded by the configured model
    other_models: int  # active heads embedded only by another model: stale until reindexed


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """One exact revision plus the Artifact's current lifecycle facts."""

    key: ArtifactKey
    head_revision: int
    state: str
    kind: str
    text: str
    tags: tuple[str, ...]
    created_at: str
    merged_into: str | None
    merged_from: tuple[ArtifactKey, ...]
    # True only on a create answered from an earlier create with the same idempotency key.
    replayed: bool = False
    observed_at: str | None = None  # as given at create; None: the revision's created_at

    @property
    def observed(self) -> str:
        """When the revision's statement was true: as given, else when it was recorded."""
        return self.observed_at or self.created_at


R = TypeVar("R")


# Not slotted: on Python 3.11 a slotted frozen generic dataclass cannot be built through an alias such as
# ``ScoredMemory(...)`` (setting ``__orig_class__`` raises TypeError). The stores build ``Scored(...)`` directly.
@dataclass(frozen=True)
class Scored(Generic[R]):
    """A search hit of any family: the record and its score (higher ranks first)."""

    record: R
    score: float


ScoredMemory = Scored[MemoryRecord]


class Store(Protocol):
    """Everything the runtime needs from storage. Writes are transactional; reads never block writes."""

    def create_scope(self, scope_id: str, title: str, context_references: Sequence[str]) -> ScopeRecord: ...
    def update_scope(self, scope_id: str, edit: ScopeEdit, keep: Callable[[str], bool] | None = None) -> ScopeRecord:
        """Replace title and references; current references for which ``keep`` is true stay, after the new ones
        (the Server keeps those the caller may not read, so an update cannot drop what the caller cannot see)."""
        ...

    def get_scope(self, scope_id: str) -> ScopeRecord: ...
    def delete_scope(self, scope_id: str) -> DeletedScope:
        """Delete the Scope and everything in it, and its name from other Scopes' references (one transaction)."""
        ...

    def list_scopes(self) -> list[ScopeRecord]: ...

    def create_memories(self, scope_id: str, items: Sequence[NewMemory]) -> list[MemoryRecord]: ...
    def revise_memory(
        self, scope_id: str, artifact_id: str, expected_revision: int, edit: MemoryEdit
    ) -> MemoryRecord: ...
    def change_lifecycle(
        self, scope_id: str, artifact_id: str, action: LifecycleAction, expected_revision: int | None
    ) -> MemoryRecord: ...
    def merge_memories(self, scope_id: str, merge: MemoryMerge) -> MemoryRecord: ...
    def purge_memory(self, scope_id: str, artifact_id: str) -> PurgedArtifact:
        """Erase the text of every revision and remove the memory from every index, keeping a tombstone (exact
        reads then raise ``ArtifactPurged``); idempotent."""
        ...

    def purge_artifact(self, scope_id: str, family: ArtifactFamily, artifact_id: str) -> PurgedArtifact:
        """``purge_memory`` for an Atomic Memory, Topic Memory or Experience."""
        ...

    def read_head(self, scope_id: str, artifact_id: str) -> MemoryRecord: ...
    def read_revision(self, scope_id: str, artifact_id: str, revision: int) -> MemoryRecord: ...
    def list_memories(
        self, scope_id: str, state: str | None, before: int | None, limit: int
    ) -> list[tuple[int, MemoryRecord]]:
        """Heads, newest first, each with its position (pass the last one as ``before`` for the next page)."""
        ...

    def search_text(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredMemory]: ...
    def term_statistics(self, scope_id: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """The Scope's active memories, and how many hold each term (the relevance floor's IDF)."""
        ...

    def memories_holding(self, scope_id: str, terms: Sequence[str], limit: int) -> list[MemoryRecord]:
        """Active heads holding ``terms`` (a few rare ones), the rarest held first, then the latest written."""
        ...

    def ready(self) -> bool: ...
    def close(self) -> None: ...
    def search_vector(
        self, scope_id: str, model_id: str, vector: npt.NDArray[np.float32], limit: int
    ) -> list[ScoredMemory]: ...

    def embedding_backlog(self, model_id: str, after_rowid: int, limit: int) -> list[EmbeddingTask]: ...
    def write_embeddings(
        self, model_id: str, items: Sequence[tuple[EmbeddingTask, npt.NDArray[np.float32]]]
    ) -> int: ...
    def embedding_status(self, model_id: str) -> EmbeddingStatus: ...
    def memory_vectors(
        self, scope_id: str, model_id: str, keys: Sequence[ArtifactKey]
    ) -> dict[ArtifactKey, npt.NDArray[np.float32]]:
        """The stored embeddings by ``model_id`` of these Atomic Memory revisions of one Scope (those that have
        one), exactly as written."""
        ...


# -- Topic Memory, Experience, Profile ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NewTopic:
    title: str
    body: str
    tags: tuple[str, ...]
    idempotency_key: str | None = None
    # As for NewMemory: same key + same digest replays, else conflicts.
    request_digest: str = ""
    embedding: Embedding | None = None  # of the rendered text, "title\n\nbody"


@dataclass(frozen=True, slots=True)
class TopicEdit:
    """The next revision of a Topic Memory: a ``title``, ``body`` or ``tags`` of None keeps the head's."""

    title: str | None = None
    body: str | None = None
    tags: tuple[str, ...] | None = None
    embedding: Embedding | None = None  # of the new rendered text; None: the revision has none

    def title_and_body(self, head_title: str, head_body: str) -> tuple[str, str]:
        """The new revision's title and body, given the head's: what is stored, and what its embedding is of."""
        return (head_title if self.title is None else self.title, head_body if self.body is None else self.body)


@dataclass(frozen=True, slots=True)
class TopicRecord:
    """One exact Topic Memory revision plus the Artifact's current lifecycle facts."""

    key: ArtifactKey
    head_revision: int
    state: str
    title: str
    body: str
    tags: tuple[str, ...]
    created_at: str

    def render_text(self) -> str:
        """The text to inject: the title, a blank line, the body."""
        return f"{self.title}\n\n{self.body}"


ScoredTopic = Scored[TopicRecord]


@dataclass(frozen=True, slots=True)
class ExperienceContent:
    """The three fields of a reviewed lesson."""

    situation: str
    what_worked: str
    what_to_avoid: str

    def fields(self) -> dict[str, str]:
        """The three fields by name: how a Candidate row stores them and how the wire models name them."""
        return {"situation": self.situation, "what_worked": self.what_worked, "what_to_avoid": self.what_to_avoid}


@dataclass(frozen=True, slots=True)
class ExperienceRecord:
    """One exact, immutable Experience revision plus the Artifact's current lifecycle facts."""

    key: ArtifactKey
    head_revision: int
    state: str
    content: ExperienceContent
    tags: tuple[str, ...]
    created_at: str
    # The approved Candidate this revision came from.
    candidate_id: str

    def render_text(self) -> str:
        """The text to inject: one labelled line per field."""
        c = self.content
        return f"Situation: {c.situation}\nWhat worked: {c.what_worked}\nWhat to avoid: {c.what_to_avoid}"


ScoredExperience = Scored[ExperienceRecord]


@dataclass(frozen=True, slots=True)
class ExperienceDraft:
    """What a Candidate proposes: content, tags, and optionally the Experience head it revises."""

    content: ExperienceContent
    tags: tuple[str, ...]
    target_artifact_id: str | None = None
    expected_revision: int | None = None

    def __post_init__(self) -> None:
        if (self.target_artifact_id is None) != (self.expected_revision is None):
            raise ValueError("target_artifact_id and expected_revision go together")


@dataclass(frozen=True, slots=True)
class CandidateRecord:
    """An Experience Candidate. Only ``pending`` ones can be reviewed; ``result`` is set on approval."""

    scope_id: str
    candidate_id: str
    candidate_revision: int
    status: CandidateStatus
    draft: ExperienceDraft
    reject_reason: str | None
    result: ArtifactKey | None
    created_at: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class ProfileEntry:
    """One ``key: value`` convention of a Profile."""

    key: str
    value: str

    def render(self) -> str:
        """The entry as injected: ``key: value``, with the value's further lines indented under it."""
        return f"{self.key}: " + self.value.replace("\n", "\n  ")


@dataclass(frozen=True, slots=True)
class ProfileRecord:
    """One committed Profile revision: the Scope's ordered ``key: value`` conventions."""

    key: ArtifactKey
    head_revision: int
    entries: tuple[ProfileEntry, ...]
    created_at: str

    def render_text(self) -> str:
        """The text to inject: the entries, one after another, in order."""
        return "\n".join(e.render() for e in self.entries)


@runtime_checkable
class FamilyStore(Protocol):
    """Topic Memory, Experience and Profile storage. Same transaction and read rules as ``Store``.

    The readers the prepare path calls (``search_topics``, ``search_experiences``, ``read_profile_snapshot``)
    do not check that the Scope exists: an unknown Scope has no hits and no snapshot.
    """

    def create_topic(self, scope_id: str, item: NewTopic) -> TopicRecord: ...
    def revise_topic(self, scope_id: str, artifact_id: str, expected_revision: int, edit: TopicEdit) -> TopicRecord: ...
    def change_topic_lifecycle(
        self, scope_id: str, artifact_id: str, action: TopicAction, expected_revision: int | None
    ) -> TopicRecord: ...
    def read_topic_head(self, scope_id: str, artifact_id: str) -> TopicRecord: ...
    def read_topic_revision(self, scope_id: str, artifact_id: str, revision: int) -> TopicRecord: ...
    def search_topics(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredTopic]: ...
    def search_topic_vector(
        self, scope_id: str, model_id: str, vector: npt.NDArray[np.float32], limit: int
    ) -> list[ScoredTopic]: ...

    def propose_experience(self, scope_id: str, draft: ExperienceDraft) -> CandidateRecord: ...
    def read_candidate(self, scope_id: str, candidate_id: str) -> CandidateRecord: ...
    def approve_candidate(
        self, scope_id: str, candidate_id: str, expected_candidate_revision: int | None
    ) -> tuple[CandidateRecord, ExperienceRecord]: ...
    def reject_candidate(
        self, scope_id: str, candidate_id: str, expected_candidate_revision: int | None, reason: str | None
    ) -> CandidateRecord: ...
    def revise_candidate(
        self, scope_id: str, candidate_id: str, expected_candidate_revision: int, draft: ExperienceDraft
    ) -> CandidateRecord: ...
    def change_experience_lifecycle(
        self, scope_id: str, artifact_id: str, action: ExperienceAction, expected_revision: int | None
    ) -> ExperienceRecord: ...
    def read_experience_head(self, scope_id: str, artifact_id: str) -> ExperienceRecord: ...
    def read_experience_revision(self, scope_id: str, artifact_id: str, revision: int) -> ExperienceRecord: ...
    def search_experiences(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredExperience]: ...
    def topic_term_statistics(self, scope_id: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]: ...
    def experience_term_statistics(self, scope_id: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]: ...

    def commit_profile(
        self, scope_id: str, expected_revision: int, entries: Sequence[ProfileEntry]
    ) -> ProfileRecord: ...
    def read_profile_snapshot(self, scope_id: str) -> ProfileRecord | None: ...
    def read_profile_revision(self, scope_id: str, revision: int) -> ProfileRecord: ...
