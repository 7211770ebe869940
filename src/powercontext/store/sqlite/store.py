"""SQLite adapter of the ``Store`` protocol.

One writer connection behind a lock serializes writes inside this process (so concurrent HTTP
writers queue instead of meeting "database is locked"); a busy timeout covers other processes.
Readers use one connection per thread and never block the writer (WAL). The statements shared with the
OceanBase store are ``core.store.SqlStore``'s; the full-text index is ``packed.PackedIndex``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import quote

from powercontext.store.base import Scored, ScoredMemory
from powercontext.store.core.driver import sqlite
from powercontext.store.core.embeddings import CODE_VECTORS, artifact_vectors
from powercontext.store.core.embeddings import generation as vector_generation
from powercontext.store.core.family_rows import now
from powercontext.store.core.memory_rows import FAMILY, SELECT_MEMORY, memory_record
from powercontext.store.core.store import SqlStore
from powercontext.store.core.vectors import Vector, VectorChanges, load_matrix
from powercontext.store.errors import StoreUnavailable
from powercontext.store.faults import storage_fault
from powercontext.store.health import IntegrityCheck, StoreHealth
from powercontext.store.sqlite.migrations import LATEST_VERSION, apply_migrations
from powercontext.store.sqlite.packed import PackedIndex
from powercontext.store.sqlite.preflight import CHECK_AT_START_MAX_BYTES, check_file, check_open, refusal
from powercontext.store.sqlite.snapshot import one_snapshot

_BUSY_TIMEOUT_MS = 10_000
# The Scope's heads in rowid order, the order their vectors were written in (migration 15): walked by artifact id
# instead, a million-memory matrix reads its vectors all over the file: 32 s of SQLite reads against 3-5 s.
_ARTIFACT_VECTORS_IN_ROWID_ORDER = artifact_vectors("artifacts a INDEXED BY artifacts_by_scope_rowid")


class SqliteStore(SqlStore):
    """The embedded default store (``Store``, ``FamilyStore``, ``PromptStore``, ``CodeStore``). Thread-safe."""

    _DRIVER_ERRORS = (sqlite.Error,)
    _EMBEDDINGS_E = "artifact_embeddings e INDEXED BY artifact_embedding_models"  # migration 15

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        check_file(self.path)  # a store that cannot work is refused before anything is written to it
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._open_pool(VectorChanges(), StoreHealth(self.path.parent, self.path))
        self._fulltext: PackedIndex = PackedIndex()
        self._writer = self._connect()
        # Deleted or overwritten content is zeroed in the file, not left in free space: a purged memory's text
        # (core/purge.py) must not be recoverable from the database file.
        self._writer.execute("PRAGMA secure_delete = ON")
        try:
            check_open(self._writer, self.path, LATEST_VERSION)
            self._writer.execute("PRAGMA journal_mode = WAL")
            apply_migrations(self._writer, now())
        except BaseException as exc:
            self._writer.close()
            refused = refusal(exc, self.path)
            if refused is exc:
                raise
            raise refused from exc
        if self.path.stat().st_size > CHECK_AT_START_MAX_BYTES:  # too large to check before serving
            self.integrity: IntegrityCheck | None = IntegrityCheck(self._quick_check, self.health)
        else:
            self.integrity = None

    # -- connections ---------------------------------------------------------------------------

    def _connect(self) -> Any:
        conn = sqlite.connect(str(self.path), isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA cache_size = -8000")
        return conn

    def _reader(self) -> Any:
        if self._closed:
            raise StoreUnavailable()
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            conn.execute("PRAGMA query_only = ON")
            self._local.conn = conn
            with self._readers_lock:
                self._readers.append(conn)
        return conn

    @contextmanager
    def _write(self) -> Iterator[Any]:
        with self._write_turn():
            conn = self._writer
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite.OperationalError as exc:  # a storage fault, or another process held the lock too long
                fault = storage_fault(exc, "write")
                if fault is None:
                    raise StoreUnavailable() from exc
                self.health.note_fault(fault)
                raise fault from exc
            self._changes = VectorChanges()
            self._fulltext.discard()
            try:
                yield conn
                self._fulltext.flush(conn)  # the transaction's index writes, buffered until now
                conn.execute("COMMIT")
            except BaseException as exc:
                self._fulltext.discard()
                self._roll_back(conn)
                fault = storage_fault(exc, "write") if isinstance(exc, sqlite.Error) else None
                if fault is not None:  # a full disk, a read-only file: a stable code, never a 500
                    self.health.note_fault(fault)
                    raise fault from exc
                raise
            self.health.note_write_ok()
            # Still under the write lock, so cached matrices see commits in order.
            self._vectors.apply(self._changes)

    def _after_purge(self, scope_id: str) -> None:
        """Copy the WAL into the database and truncate it: the purge's transaction rewrote (packed postings) or
        zeroed (``secure_delete``) every page that held the text, but older copies of those pages live in the WAL
        until a checkpoint. A checkpoint waits for readers of older snapshots; it is retried briefly, and what it
        could not reach is checkpointed by a later purge or write."""
        with self._write_turn():
            for _ in range(20):
                busy = self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
                if not busy:
                    return
                time.sleep(0.05)

    def _quick_check(self) -> str:
        """SQLite's ``quick_check`` verdict, on a read-only connection of its own (one line)."""
        # A path is not a URI: '#', '?' and '%' in a directory's name, or a leading '//', must be escaped.
        uri = "file:" + quote(os.path.realpath(self.path)) + "?mode=ro"
        conn = sqlite.connect(uri, uri=True, check_same_thread=False)
        try:
            return " ".join(str(conn.execute("PRAGMA quick_check(1)").fetchone()[0]).split())
        finally:
            conn.close()

    @staticmethod
    def _roll_back(conn: Any) -> None:
        """Roll back what is still open: SQLite ends the transaction itself on some faults (a full disk, an
        I/O error), and a failed rollback must not hide the error that caused it."""
        if not conn.in_transaction:
            return
        with suppress(sqlite.Error):  # the connection's next BEGIN starts clean, or fails with the same fault
            conn.execute("ROLLBACK")

    def _close_writer(self) -> None:
        self._writer.close()

    # -- vectors -------------------------------------------------------------------------------

    def search_vector(self, scope_id: str, model_id: str, vector: Vector, limit: int) -> list[ScoredMemory]:
        """Active heads of the Scope by cosine similarity to ``vector``, among those embedded by ``model_id``."""
        conn = self._reader()
        hits = self._vector_hits(conn, scope_id, FAMILY, model_id, vector, limit)
        if not hits:
            return []
        marks = ",".join("?" * len(hits))
        rows = conn.execute(
            SELECT_MEMORY + f" WHERE a.id IN ({marks}) AND r.revision = a.head_revision AND a.state = 'active'",
            [rowid for rowid, _ in hits],
        ).fetchall()
        by_rowid = {row[0]: memory_record(row) for row in rows}
        return [Scored(by_rowid[rowid], score) for rowid, score in hits if rowid in by_rowid]

    def _vector_hits(
        self, conn: Any, scope_id: str, family: str, model_id: str, vector: Vector, limit: int
    ) -> list[tuple[int, float]]:
        """(rowid, cosine) of the best searchable rows of one (Scope, family) embedded by ``model_id``: artifact
        rows (active heads) for the artifact families, chunk rows for ``code``."""
        matrix_key = (scope_id, family, model_id)
        matrix = self._vectors.get(matrix_key, vector_generation(conn, scope_id, family))
        if matrix is None:
            with one_snapshot(conn):  # the generation and the rows it describes
                generation = vector_generation(conn, scope_id, family)
                if family == "code":
                    rows = conn.execute(CODE_VECTORS, (scope_id, model_id))
                else:
                    rows = conn.execute(_ARTIFACT_VECTORS_IN_ROWID_ORDER, (scope_id, family, model_id))
                matrix = load_matrix(rows, len(vector), generation)
            self._vectors.install(matrix_key, matrix)
        return matrix.top(vector, limit)
