"""Embeddings of active heads: the backlog a reindex works through, its writes, its status, and the rows
a vector matrix is loaded from."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from powercontext.domain.identity import ArtifactKey
from powercontext.store.base import EmbeddingStatus, EmbeddingTask
from powercontext.store.core.connections import StoreConnections
from powercontext.store.core.memory_rows import EMBEDDED_FAMILIES, FAMILY
from powercontext.store.core.vectors import Vector, from_blob

# A statement deadline of 10 minutes on OceanBase (SQLite reads it as a comment), for reads that may walk a whole
# Scope: past the session's 10 s ``ob_query_timeout`` at a million memories on embedded seekdb (a matrix load took
# 13.5 s, and every hybrid prepare of that Scope answered 503). They are reads and hold no lock.
LONG_READ_HINT: Final = "/*+ QUERY_TIMEOUT(600000000) */"


def artifact_vectors(artifacts: str = "artifacts a") -> str:
    """The statement a (Scope, family, model) vector matrix loads from; ``artifacts`` is the table it walks,
    aliased ``a`` (a backend may name an index there: SQLite walks the heads in rowid order)."""
    return (
        f"SELECT {LONG_READ_HINT} a.id, e.vector FROM {artifacts}"
        " JOIN artifact_embeddings e ON e.artifact = a.id AND e.revision = a.head_revision"
        " WHERE a.scope_id = ? AND a.family = ? AND a.state = 'active' AND e.model_id = ?"
    )


ARTIFACT_VECTORS: Final = artifact_vectors()
CODE_VECTORS: Final = (
    f"SELECT {LONG_READ_HINT} c.id, e.vector FROM code_chunk_embeddings e JOIN code_chunks c ON c.id = e.chunk"
    " JOIN code_files f ON f.id = c.file JOIN code_trees t ON t.id = f.tree WHERE t.scope_id = ? AND e.model_id = ?"
)


def generation(conn: Any, scope_id: str, family: str) -> int:
    row = conn.execute(
        "SELECT generation FROM vector_generations WHERE scope_id = ? AND family = ?", (scope_id, family)
    ).fetchone()
    return 0 if row is None else int(row[0])


class Embeddings(StoreConnections):
    """The embedding part of ``Store``; mixed into ``SqlStore``."""

    # The table, aliased ``e``, that the backlog and the status look a head's vector up in: a backend names an
    # index there when its planner would otherwise read each whole row, vector included (SQLite, migration 15).
    _EMBEDDINGS_E: str = "artifact_embeddings e"

    def embedding_backlog(self, model_id: str, after_rowid: int, limit: int) -> list[EmbeddingTask]:
        """Active heads after ``after_rowid`` (in rowid order) with no embedding by ``model_id``."""
        rows = (
            self._reader()
            .execute(
                # With nothing to embed this walks every head: its own deadline on OceanBase (LONG_READ_HINT).
                f"SELECT {LONG_READ_HINT} a.id, a.scope_id, a.artifact_id, a.head_revision, r.body, a.family"
                " FROM artifacts a"
                " JOIN revisions r ON r.artifact = a.id AND r.revision = a.head_revision"
                f" LEFT JOIN {self._EMBEDDINGS_E} ON e.artifact = a.id AND e.revision = a.head_revision"
                f" WHERE a.id > ? AND a.family IN {EMBEDDED_FAMILIES} AND a.state = 'active'"
                " AND (e.model_id IS NULL OR e.model_id != ?) ORDER BY a.id LIMIT ?",
                (after_rowid, model_id, limit),
            )
            .fetchall()
        )
        return [EmbeddingTask(r[0], ArtifactKey(r[1], r[5], r[2], r[3]), r[4]) for r in rows]

    def write_embeddings(self, model_id: str, items: Sequence[tuple[EmbeddingTask, Vector]]) -> int:
        """Store embeddings for tasks whose revision is still the active head; returns how many were stored."""
        written = 0
        with self._write() as conn:
            for task, vector in items:
                head = conn.execute(
                    "SELECT scope_id FROM artifacts WHERE id = ? AND head_revision = ? AND state = 'active'",
                    (task.rowid, task.key.revision),
                ).fetchone()
                if head is None:
                    continue  # revised or retired since the backlog was read: its new head is in a later backlog
                self._changes.store(conn, head[0], task.key.family, task.rowid, task.key.revision, model_id, vector)
                written += 1
        return written

    def embedding_status(self, model_id: str) -> EmbeddingStatus:
        row = (
            self._reader()
            .execute(
                "SELECT COUNT(*), COUNT(e.model_id), COALESCE(SUM(e.model_id = ?), 0) FROM artifacts a"
                f" LEFT JOIN {self._EMBEDDINGS_E} ON e.artifact = a.id AND e.revision = a.head_revision"
                f" WHERE a.family IN {EMBEDDED_FAMILIES} AND a.state = 'active'",
                (model_id,),
            )
            .fetchone()
        )
        return EmbeddingStatus(active_heads=row[0], current_model=row[2], other_models=row[1] - row[2])

    def memory_vectors(self, scope_id: str, model_id: str, keys: Sequence[ArtifactKey]) -> dict[ArtifactKey, Vector]:
        """The stored embeddings by ``model_id`` of these Atomic Memory revisions of one Scope, by key; a revision
        with none (or only another model's), or a key of another Scope or family, is absent.

        For the Supersession rule's vector test (recall/supersession.py): the hybrid search returns records and
        their cosine to the query, not the hits' own vectors, and embedding the hits again would be a provider call
        per prepare. Read from the stored float32 bytes, which both stores keep exactly."""
        wanted = {k for k in keys if k.scope_id == scope_id and k.family == FAMILY}
        if not wanted:
            return {}
        ids = sorted({k.artifact_id for k in wanted})
        marks = ",".join("?" * len(ids))
        rows = (
            self._reader()
            .execute(
                "SELECT a.artifact_id, e.revision, e.vector FROM artifacts a"
                " JOIN artifact_embeddings e ON e.artifact = a.id"
                f" WHERE a.scope_id = ? AND a.family = ? AND a.artifact_id IN ({marks}) AND e.model_id = ?",
                [scope_id, FAMILY, *ids, model_id],
            )
            .fetchall()
        )
        found = {
            ArtifactKey(scope_id, FAMILY, str(artifact_id), int(revision)): blob for artifact_id, revision, blob in rows
        }
        return {key: from_blob(bytes(found[key])) for key in wanted if key in found}
