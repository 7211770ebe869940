"""Vector search on OceanBase: the shared in-memory matrix checked against the ``vector_generations`` counter in
as few round trips as possible, or the engine's own ``VECTOR`` search on a ``?vectors=native`` database."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from powercontext.domain.families import TOPIC_MEMORY
from powercontext.store.base import Scored, ScoredMemory, ScoredTopic
from powercontext.store.core.connections import StoreConnections
from powercontext.store.core.embeddings import ARTIFACT_VECTORS, CODE_VECTORS
from powercontext.store.core.embeddings import generation as vector_generation
from powercontext.store.core.family_rows import SELECT_ROW, artifact_row
from powercontext.store.core.memory_rows import FAMILY, SELECT_MEMORY, memory_record
from powercontext.store.core.topics import topic_record
from powercontext.store.core.vectors import Vector, VectorCache, load_matrix
from powercontext.store.oceanbase import native_vectors
from powercontext.store.oceanbase.dialect import Connection

if TYPE_CHECKING:
    from powercontext.store.oceanbase.native_vectors import VectorMirror


class OceanBaseVectorSearch(StoreConnections):
    """``search_vector``, ``search_topic_vector`` and the ``_vector_hits`` every vector search of the core uses."""

    if TYPE_CHECKING:
        _vectors: VectorCache
        _mirror: VectorMirror

    def search_vector(self, scope_id: str, model_id: str, vector: Vector, limit: int) -> list[ScoredMemory]:
        """Active heads of the Scope by cosine similarity to ``vector``, among those embedded by ``model_id``."""
        hits, rows = self._vector_rows(scope_id, FAMILY, model_id, vector, limit, SELECT_MEMORY)
        by_rowid = {row[0]: memory_record(row) for row in rows}
        return [Scored(by_rowid[rowid], score) for rowid, score in hits if rowid in by_rowid]

    def search_topic_vector(self, scope_id: str, model_id: str, vector: Vector, limit: int) -> list[ScoredTopic]:
        """Active Topic Memory heads of one Scope by cosine similarity, among those embedded by ``model_id``."""
        hits, raw = self._vector_rows(scope_id, TOPIC_MEMORY, model_id, vector, limit, SELECT_ROW)
        rows = {row.rowid: row for row in map(artifact_row, raw)}
        return [Scored(topic_record(rows[rowid]), score) for rowid, score in hits if rowid in rows]

    def _vector_rows(
        self, scope_id: str, family: str, model_id: str, vector: Vector, limit: int, select: str
    ) -> tuple[list[tuple[int, float]], list[tuple[Any, ...]]]:
        """The best hits, (rowid, cosine), and the active head rows of them (``select``'s columns).

        Every statement is a round trip to the engine, and the vector side of a hybrid prepare is its longest
        path. So a matrix this process holds is ranked first, and its hits' rows are read in one statement
        together with the (Scope, family) generation. If that generation is still the matrix's, the matrix was
        current when the rows were read and the answer stands; if not, or if there was nothing to read, the
        search runs the checked way: generation first, the matrix rebuilt if another process wrote, then the rows.
        """
        conn = self._reader()
        matrix = None if self._mirror.native else self._vectors.peek((scope_id, family, model_id))
        if matrix is not None:
            generation = matrix.generation
            hits = matrix.top(vector, limit)
            if hits:
                rows = _head_rows(conn, _with_generation(select), hits, (scope_id, family))
                if rows and all((row[-1] or 0) == generation for row in rows):
                    return hits, [row[:-1] for row in rows]
        hits = self._vector_hits(conn, scope_id, family, model_id, vector, limit)
        return hits, (_head_rows(conn, select, hits) if hits else [])

    def _vector_hits(
        self, conn: Any, scope_id: str, family: str, model_id: str, vector: Vector, limit: int
    ) -> list[tuple[int, float]]:
        if self._mirror.native and family != "code":
            if not self._mirror.knows(len(vector)):
                self._mirror.know(conn)  # another process may have created the table
                if not self._mirror.knows(len(vector)):
                    return []  # nothing of this dimension was ever written
            return native_vectors.search(conn, scope_id, family, model_id, vector, limit)
        matrix_key = (scope_id, family, model_id)
        generation = vector_generation(conn, scope_id, family)
        matrix = self._vectors.get(matrix_key, generation)
        if matrix is None:
            # Rows read after the generation can only be newer than it: the matrix is labelled with the
            # older generation, so a write that raced this load forces the next search to rebuild.
            if family == "code":
                rows = conn.execute(CODE_VECTORS, (scope_id, model_id)).fetchall()
            else:
                rows = conn.execute(ARTIFACT_VECTORS, (scope_id, family, model_id)).fetchall()
            matrix = load_matrix(rows, len(vector), generation)
            self._vectors.install(matrix_key, matrix)
        return matrix.top(vector, limit)


# The prepare path's reads whose columns are all text or numbers (the statement text up to its first table):


def _head_rows(
    conn: Connection, select: str, hits: Sequence[tuple[int, float]], params: Sequence[Any] = ()
) -> list[tuple[Any, ...]]:
    """``select``'s rows of the hits that are still active heads (a hit may have been retired since)."""
    marks = ",".join("?" * len(hits))
    return conn.execute(
        select + f" WHERE a.id IN ({marks}) AND r.revision = a.head_revision AND a.state = 'active'",
        [*params, *(rowid for rowid, _ in hits)],
    ).fetchall()


def _with_generation(select: str) -> str:
    """``select`` (``SELECT … FROM artifacts a …``) with the (Scope, family) vector generation as a last column
    (NULL before the first write): two parameters, the Scope and the family, before the statement's own."""
    assert "\nFROM artifacts a" in select, "a select of artifact rows"
    return select.replace(
        "\nFROM artifacts a",
        ", (SELECT generation FROM vector_generations WHERE scope_id = ? AND family = ?)\nFROM artifacts a",
        1,
    )
