"""Embeddings in the engine's ``VECTOR(n)`` columns, searched by the engine (``?vectors=native``).

The default keeps each embedding as float32 bytes and searches an exact in-memory matrix (store/core/vectors.py):
seekdb returns a ``VECTOR`` value only as text with six significant digits, so bytes are the only exact copy, and
the matrix answers a query in about a millisecond (docs/oceanbase.md). With this option a new database also keeps
every embedding in a ``VECTOR(n)`` column of ``artifact_vectors_<n>`` (one table per dimension, created on first
use, since ``n`` is fixed per column and the dimension is the model's), written in the same transaction as the
bytes, and the engine ranks the Atomic Memory, Topic Memory and Experience searches itself:
``ORDER BY cosine_distance(v, query)`` over the Scope's active heads. The search is exact (no approximate index),
so a write is found by the next request; the bytes stay the copy's source of truth. Code chunk vectors keep the
in-memory search (they live in their own table).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from powercontext.store.core.vectors import Vector, to_blob
from powercontext.store.oceanbase import native_mode

if TYPE_CHECKING:
    from powercontext.store.oceanbase.dialect import Connection

LOCK_ROW: Final = "vectors-native"
MAX_DIMENSION: Final = 16_000  # the engine's VECTOR limit; a longer vector is a provider bug, not a table
_TABLE: Final = re.compile(r"^artifact_vectors_(\d+)$")


def table(dimension: int) -> str:
    return f"artifact_vectors_{dimension}"


def _ddl(dimension: int) -> str:
    return (
        f"CREATE TABLE IF NOT EXISTS {table(dimension)} (artifact BIGINT NOT NULL, revision INT NOT NULL,"
        f" model_id VARCHAR(255) NOT NULL, v VECTOR({dimension}) NOT NULL, PRIMARY KEY (artifact, revision))"
        " DEFAULT CHARSET utf8mb4 COLLATE utf8mb4_bin"
    )


def prepare(conn: Connection, requested_native: bool, display: str) -> bool:
    """Whether this database keeps and searches native vectors; marks a new database that asks for it."""
    return native_mode.claim(
        conn,
        mark=LOCK_ROW,
        requested=requested_native,
        ddl="",  # the tables come per dimension, on first use
        holds_data="SELECT 1 FROM artifact_embeddings LIMIT 1",
        option="vectors=native",
        display=display,
    )


class VectorMirror:
    """Keeps ``artifact_vectors_<n>`` in step with every ``artifact_embeddings`` write of a native database.

    ``create_table`` runs DDL on a session of its own: DDL commits implicitly, and the writer's transaction must
    stay whole. A table created that way is visible to the open transaction at once.
    """

    def __init__(self, create_table: Callable[[str], None]) -> None:
        self.native = False
        self._create_table = create_table
        self._known: set[int] = set()
        self._lock = threading.Lock()

    def know(self, conn: Connection) -> None:
        """Learn the dimensions that already have a table."""
        names = [str(name) for (name,) in conn.query("SHOW TABLES LIKE 'artifact\\_vectors\\_%'").fetchall()]
        found = {int(m.group(1)) for m in map(_TABLE.match, names) if m}
        with self._lock:
            self._known |= found

    def knows(self, dimension: int) -> bool:
        """Whether a table for ``dimension`` is known to exist."""
        with self._lock:
            return dimension in self._known

    def write(self, conn: Connection, rows: Sequence[Sequence[Any]]) -> None:
        """Upsert (artifact, revision, model_id, float32 bytes) rows into their dimension's table."""
        if not self.native or not rows:
            return
        by_dimension: dict[int, list[Sequence[Any]]] = {}
        for row in rows:
            dimension = len(row[3]) // 4
            if 0 < dimension <= MAX_DIMENSION:
                by_dimension.setdefault(dimension, []).append(row)
        for dimension, group in sorted(by_dimension.items()):
            self._ensure(dimension)
            conn.insert_rows(
                f"INSERT INTO {table(dimension)} (artifact, revision, model_id, v) VALUES ",
                [(r[0], r[1], r[2], bytes(r[3])) for r in group],
                " ON DUPLICATE KEY UPDATE model_id = VALUES(model_id), v = VALUES(v)",
            )

    def _ensure(self, dimension: int) -> None:
        with self._lock:
            if dimension in self._known:
                return
            self._create_table(_ddl(dimension))
            self._known.add(dimension)


def search(
    conn: Connection, scope_id: str, family: str, model_id: str, vector: Vector, limit: int
) -> list[tuple[int, float]]:
    """(artifact row id, cosine) of the Scope's active heads of ``family`` closest to ``vector``, best first."""
    dimension = int(vector.shape[0])
    rows = conn.query(
        f"SELECT a.id, cosine_distance(v.v, %s) AS d FROM {table(dimension)} v"
        " JOIN artifacts a ON a.id = v.artifact AND v.revision = a.head_revision"
        " WHERE a.scope_id = %s AND a.family = %s AND a.state = 'active' AND v.model_id = %s"
        " ORDER BY d, a.id LIMIT %s",
        (to_blob(vector), scope_id, family, model_id, limit),
    ).fetchall()
    return [(int(rowid), 1.0 - float(distance)) for rowid, distance in rows]
