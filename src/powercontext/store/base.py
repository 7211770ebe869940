"""The storage protocol every backend implements, and the records it returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from powercontext.domain.identity import ArtifactKey
from powercontext.domain.lifecycle import LifecycleAction


@dataclass(frozen=True, slots=True)
class ScopeRecord:
    scope_id: str
    title: str
    context_references: tuple[str, ...]
    created_at: str
    updated_at: str


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


@dataclass(frozen=True, slots=True)
class ScoredMemory:
    record: MemoryRecord
    score: float


class Store(Protocol):
    """Everything the runtime needs from storage. Writes are transactional; reads never block writes."""

    def create_scope(self, scope_id: str, title: str, context_references: Sequence[str]) -> ScopeRecord: ...
    def update_scope(self, scope_id: str, title: str, context_references: Sequence[str]) -> ScopeRecord: ...
    def get_scope(self, scope_id: str) -> ScopeRecord: ...
    def list_scopes(self) -> list[ScopeRecord]: ...

    def create_memories(self, scope_id: str, items: Sequence[NewMemory]) -> list[MemoryRecord]: ...
    def revise_memory(
        self,
        scope_id: str,
        artifact_id: str,
        expected_revision: int,
        text: str,
        kind: str | None,
        tags: Sequence[str] | None,
        embedding: Embedding | None = None,
    ) -> MemoryRecord: ...
    def change_lifecycle(
        self, scope_id: str, artifact_id: str, action: LifecycleAction, expected_revision: int | None
    ) -> MemoryRecord: ...
    def merge_memories(
        self,
        scope_id: str,
        sources: Sequence[tuple[str, int]],
        text: str,
        kind: str,
        tags: Sequence[str],
        embedding: Embedding | None = None,
    ) -> MemoryRecord: ...

    def read_head(self, scope_id: str, artifact_id: str) -> MemoryRecord: ...
    def read_revision(self, scope_id: str, artifact_id: str, revision: int) -> MemoryRecord: ...
    def search_text(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredMemory]: ...

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
