"""The code-evidence storage protocol and its records (separate from ``Store``: a backend may lack it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from powercontext.store.base import Embedding

TreeKind = Literal["git", "dir"]


@dataclass(frozen=True, slots=True)
class CodeTreeRecord:
    """A registered work tree. ``root_path`` is server-local and absolute: never put it on the wire."""

    scope_id: str
    fingerprint: str
    kind: TreeKind
    root_path: str
    max_file_bytes: int
    indexed_at: str


@dataclass(frozen=True, slots=True)
class NewCodeChunk:
    start_line: int
    end_line: int
    snippet_sha256: str
    text: str
    terms: str  # space-separated index terms of the chunk's text
    embedding: Embedding | None = None  # of ``text``, when a provider is configured


@dataclass(frozen=True, slots=True)
class NewCodeFile:
    path: str
    file_sha256: str
    language: str
    size_bytes: int
    line_count: int
    path_terms: str  # space-separated index terms of the path
    chunks: tuple[NewCodeChunk, ...]


@dataclass(frozen=True, slots=True)
class CodeFileRecord:
    scope_id: str
    fingerprint: str
    path: str
    file_sha256: str
    language: str
    line_count: int


@dataclass(frozen=True, slots=True)
class CodeChunkRecord:
    scope_id: str
    fingerprint: str
    path: str
    file_sha256: str
    language: str
    start_line: int
    end_line: int
    snippet_sha256: str
    text: str


@dataclass(frozen=True, slots=True)
class ScoredCodeChunk:
    chunk: CodeChunkRecord
    score: float  # larger is better; comparable within one search only


@dataclass(frozen=True, slots=True)
class CodeEmbeddingTask:
    """A chunk with no vector by some model: what the background code-vector fill embeds."""

    chunk_id: int
    scope_id: str
    text: str


@runtime_checkable
class CodeStore(Protocol):
    """Code chunks of registered work trees, per Scope. Each write method is one transaction."""

    def register_code_tree(
        self, scope_id: str, fingerprint: str, kind: TreeKind, root_path: str, max_file_bytes: int
    ) -> CodeTreeRecord:
        """Create or re-point the tree (raises ``ScopeNotFound``)."""
        ...

    def code_file_hashes(self, scope_id: str, fingerprint: str) -> dict[str, str]:
        """``path -> file_sha256`` of the tree's indexed files (empty for an unknown tree)."""
        ...

    def put_code_files(self, scope_id: str, fingerprint: str, files: Sequence[NewCodeFile]) -> None:
        """Insert or replace these files and their chunks, all or nothing (raises ``CodeNotFound``)."""
        ...

    def finish_code_index(self, scope_id: str, fingerprint: str, removed_paths: Sequence[str]) -> int:
        """Remove these files, stamp ``indexed_at``; returns the tree's chunk count (raises ``CodeNotFound``)."""
        ...

    def forget_code_tree(self, scope_id: str, fingerprint: str) -> None:
        """Remove the tree with its files and chunks (nothing for an unknown tree): a failed first index."""
        ...

    def get_code_tree(self, scope_id: str, fingerprint: str) -> CodeTreeRecord:
        """Raises ``CodeNotFound`` for an unknown tree."""
        ...

    def has_code_trees(self, scope_id: str) -> bool:
        """Whether any work tree is registered for the Scope (a prepare queries code only then)."""
        ...

    def get_code_file(self, scope_id: str, fingerprint: str, path: str) -> CodeFileRecord:
        """Raises ``CodeNotFound`` for an unknown tree or a path not in its index."""
        ...

    def search_code(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredCodeChunk]:
        """BM25 over chunk terms and path terms (OR of ``terms``) in every tree of the Scope."""
        ...

    def search_code_vector(
        self, scope_id: str, model_id: str, vector: npt.NDArray[np.float32], limit: int
    ) -> list[ScoredCodeChunk]:
        """Chunks of every tree of the Scope by cosine similarity, among those embedded by ``model_id``."""
        ...

    def code_embedding_backlog(self, model_id: str, after: int, limit: int) -> list[CodeEmbeddingTask]:
        """Up to ``limit`` chunks (of every Scope) with no vector by ``model_id`` and an id above ``after``, by id."""
        ...

    def code_embedding_backlog_size(self, model_id: str) -> int:
        """How many chunks (of every Scope) have no vector by ``model_id``."""
        ...

    def write_code_embeddings(
        self, model_id: str, items: Sequence[tuple[CodeEmbeddingTask, npt.NDArray[np.float32]]]
    ) -> int:
        """Store each chunk's vector by ``model_id`` (replacing another model's), in one transaction; a chunk
        removed or re-indexed since it was read is skipped. Returns how many were written."""
        ...
