"""The OceanBase family store: ``Store``, ``FamilyStore`` and ``CodeStore`` on seekdb or an OceanBase cluster.

The write and read logic is the core's (``core.store.SqlStore``, shared with the SQLite store, neither
inheriting the other), run through a dialect-translating connection (dialect.py), so both backends enforce exact
revisions, lifecycle, merge, idempotency and compare-and-set the same way, statement for statement. What differs
lives here and beside it:

- transactions: a pymysql session per thread for reads (autocommit, read committed) and one writer
  session per process; on a server every write transaction first locks the ``store_locks`` row, so writers
  of several Server processes on one database queue like SQLite's single writer (a second writer's
  compare-and-set sees the first's commit and answers 409, never a lost update); on the embedded engine a
  lock of the operating system takes that row lock's place, since the engine dies with the process and
  could keep a dead process's row lock (writer_lock.py);
- batch writes: multi-row statements (batch.py);
- full text: exact packed postings ranked by the shared BM25 (fulltext.py, the store's ``FullTextIndex``), so
  rankings and Receipts match;
- vectors (vector_search.py): the same exact in-memory matrix as SQLite, kept current by the ``vector_generations``
  counter every write bumps, so a write is searchable by the next request (read-your-writes).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pymysql

from powercontext.store.core.driver import sqlite
from powercontext.store.core.family_rows import SELECT_ROW, now
from powercontext.store.core.memory_rows import SELECT_MEMORY
from powercontext.store.core.store import SqlStore
from powercontext.store.core.vectors import VectorChanges
from powercontext.store.errors import EngineStoppedByFullDisk, StorageFault, StoreIOError, StoreUnavailable
from powercontext.store.faults import mysql_error_number, storage_fault
from powercontext.store.health import StoreHealth
from powercontext.store.location import StoreLocation
from powercontext.store.oceanbase import native_fulltext, native_vectors
from powercontext.store.oceanbase.batch import BatchWrites
from powercontext.store.oceanbase.dialect import Connection
from powercontext.store.oceanbase.engine import connect, ensure_database, execute_alone, native_reader
from powercontext.store.oceanbase.fulltext import FtsWriter
from powercontext.store.oceanbase.migrations import apply_migrations
from powercontext.store.oceanbase.vector_search import OceanBaseVectorSearch
from powercontext.store.oceanbase.writer_lock import (
    ENGINE_MIN_FREE_BYTES,
    EngineWriterLock,
    WriterTurnTimeout,
    bound_session,
    held_writer_lock,
    keep_redo_until_commit,
    settle_recovered_transactions,
)

_log = logging.getLogger("powercontext.store")


class _Changes(VectorChanges):
    """``VectorChanges`` without SQLite's ``RETURNING`` (the bumped row is read back inside the transaction), whose
    embedding writes also go to the native vector tables of a native-vectors database (native_vectors.py)."""

    def __init__(self, mirror: native_vectors.VectorMirror | None = None) -> None:
        super().__init__()
        self._mirror = mirror

    def embeddings_written(self, conn: Any, rows: Sequence[Sequence[Any]]) -> None:
        if self._mirror is not None:
            self._mirror.write(conn, rows)

    def touch(self, conn: Any, scope_id: str, family: str) -> None:
        if (scope_id, family) in self.generations:
            return
        conn.execute(
            "INSERT INTO vector_generations (scope_id, family, generation) VALUES (?, ?, 1)"
            " ON CONFLICT (scope_id, family) DO UPDATE SET generation = generation + 1",
            (scope_id, family),
        )
        row = conn.execute(
            "SELECT generation FROM vector_generations WHERE scope_id = ? AND family = ?", (scope_id, family)
        ).fetchone()
        self.generations[(scope_id, family)] = (int(row[0]) - 1, int(row[0]))


class OceanBaseStore(OceanBaseVectorSearch, BatchWrites, SqlStore):
    """``Store``, ``FamilyStore`` and ``CodeStore`` over seekdb (embedded or server) or OceanBase. Thread-safe."""

    _DRIVER_ERRORS = (sqlite.Error, pymysql.MySQLError)

    def __init__(self, location: StoreLocation, *, create: bool = True) -> None:
        """``create=False``: the location's database must exist already (``StoreNotFound`` otherwise)."""
        self.location = location
        self.path = location.path or location.display()
        embedded = location.path if location.backend == "seekdb" else None
        self._open_pool(_Changes(), StoreHealth(embedded, min_free_bytes=ENGINE_MIN_FREE_BYTES))
        self._fts = self._fulltext = FtsWriter()
        self._mirror = native_vectors.VectorMirror(self._run_ddl)
        ensure_database(location, create=create)
        # Embedded: one engine per process, so writers take an operating-system lock, never a row lock. Its file
        # lives in the engine's directory, which opening the engine (``ensure_database``) creates when new.
        self._engine_lock = EngineWriterLock(location.path) if location.backend == "seekdb" and location.path else None
        self._writer = self._connect()
        if self._engine_lock is not None:
            keep_redo_until_commit(self._writer.raw)
        apply_migrations(self._writer, now())
        self._fts.native = native_fulltext.prepare(self._writer, location.fulltext == "native", location.display())
        self._mirror.native = native_vectors.prepare(self._writer, location.vectors == "native", location.display())
        self._mirror.know(self._writer)
        bound_session(self._writer.raw)
        if self._engine_lock is not None:
            settle_recovered_transactions(self._writer.raw)
        # A transaction from before a crash that still holds the writer row (see writer_lock.py) is reported by
        # readiness; only the embedded engine can be checked at start without mistaking a busy peer for it.
        if self._engine_lock is not None and held_writer_lock(self._writer.raw):
            self.health.note_stale_writer_lock()

    # -- connections ---------------------------------------------------------------------------

    def _connect(self) -> Connection:
        return Connection(connect(self.location, self.location.database))

    def _reconnect_writer(self) -> Connection:
        self._writer.close()  # its session is gone; this ends its statement sender too
        conn = self._writer = self._connect()
        bound_session(conn.raw)
        return conn

    def _connect_reader(self) -> Connection:
        raw = connect(self.location, self.location.database)
        raw.autocommit(True)
        return Connection(raw, native_reader(self.location), _TEXT_READS)

    def _run_ddl(self, ddl: str) -> None:
        execute_alone(self.location, ddl, self.location.database)

    def _reader(self) -> Connection:
        if self._closed:
            raise StoreUnavailable()
        conn: Connection | None = getattr(self._local, "conn", None)
        if conn is None or not conn.raw.open:
            fresh = self._connect_reader()
            with self._readers_lock:
                if conn is not None and conn in self._readers:  # its C-client session outlives the pymysql one
                    conn.close()
                    self._readers.remove(conn)
                self._readers.append(fresh)
            conn = self._local.conn = fresh
        return conn

    @contextmanager
    def _write(self) -> Iterator[Any]:
        with self._write_turn(), self._engine_turn():
            conn: Connection = self._writer
            try:
                if not conn.raw.open:
                    conn = self._reconnect_writer()
                conn.raw.begin()
                locked = {row[0] for row in conn.query(self._lock_rows, _MODE_ROWS).fetchall()}
                # Another process may have made the database native after this one started.
                self._fts.native = self._fts.native or native_fulltext.LOCK_ROW in locked
                self._mirror.native = self._mirror.native or native_vectors.LOCK_ROW in locked
            except (pymysql.MySQLError, sqlite.Error) as exc:
                self._abandon(conn)
                raise self._noted(self._write_fault(exc)) or _unavailable(exc) from exc
            self._changes = _Changes(self._mirror)
            self._fts.discard()
            try:
                yield conn
                self._fts.flush(conn)
                conn.settle()
            except BaseException as exc:
                self._fts.discard()
                self._abandon(conn)
                if isinstance(exc, pymysql.MySQLError | sqlite.OperationalError):
                    raise self._noted(self._write_fault(exc)) or _unavailable(exc) from exc
                raise
            self._commit(conn)
            self.health.note_write_ok()
            self._vectors.apply(self._changes)

    @property
    def _lock_rows(self) -> str:
        """The statement that reads the mode rows of ``store_locks``; on a server it also takes the cross-process
        writer lock (waits, up to the session's lock timeout, for another writer)."""
        if self._engine_lock is not None:
            return "SELECT name FROM store_locks WHERE name IN (%s, %s)"
        return "SELECT name FROM store_locks WHERE name IN ('writer', %s, %s) FOR UPDATE"

    def _commit(self, conn: Connection) -> None:
        """Commit; a commit that fails without an answer from the engine (a timeout: its log stopped) may still
        complete later, so its fault says the outcome is not known (``operation="commit"``) instead of "nothing
        was written" (measured on a full disk, issue 42: batches answered after 10 s were stored later)."""
        try:
            conn.raw.commit()
        except pymysql.MySQLError as exc:
            self._fts.discard()
            self._abandon(conn)
            raise self._noted(self._write_fault(exc, "commit")) or _unavailable(exc) from exc

    @contextmanager
    def _engine_turn(self) -> Iterator[None]:
        if self._engine_lock is None:
            yield
            return
        try:
            with self._engine_lock.held():
                yield
        except WriterTurnTimeout as exc:
            # The writer before this one is stuck: on a full disk, the engine's log stopped under it.
            if self.health.full_disk_unresolved():
                fault = EngineStoppedByFullDisk("write")
                self.health.note_fault(fault)
                raise fault from exc
            _log.warning("event=store.write.unavailable reason=writer-turn-timeout")
            raise

    def _write_fault(self, exc: BaseException, operation: str = "write") -> StorageFault | None:
        """The storage fault a failed write met. The embedded engine meets a full disk without saying so: its log
        stops, and statements time out (4012), wait for a lock the stuck log holds (1205) or find the log hung
        (6325); so on a disk that is full, or was when a write last failed with none succeeding since, those
        mean the disk (``EngineStoppedByFullDisk``)."""
        fault = storage_fault(exc, operation)
        unnamed = fault is None or isinstance(fault, StoreIOError)
        stalled = unnamed and mysql_error_number(exc) in _STALLED_BY_FULL_DISK
        if self._engine_lock is not None and stalled and self.health.full_disk_unresolved():
            return EngineStoppedByFullDisk(operation)
        return fault

    def _noted(self, fault: StorageFault | None) -> StorageFault | None:
        if fault is not None:
            self.health.note_fault(fault)
        return fault

    @staticmethod
    def _abandon(conn: Connection) -> None:
        try:
            conn.settle(discard=True)
            conn.raw.rollback()
        except pymysql.MySQLError:
            conn.raw.close()  # a broken session is replaced by the next write

    def _close_writer(self) -> None:
        self._writer.close()


def _unavailable(exc: BaseException) -> StoreUnavailable:
    """``StoreUnavailable`` for a write the engine failed without a storage fault; the log keeps the engine's error
    number (content-free), so that a 503 can be told from another afterwards."""
    _log.warning("event=store.write.unavailable reason=%s", mysql_error_number(exc) or type(exc).__name__)
    return StoreUnavailable()


_MODE_ROWS = (native_fulltext.LOCK_ROW, native_vectors.LOCK_ROW)
# What a write on the embedded engine answers once a full disk has stopped its log (measured, issue 42): a
# statement timeout, a lock wait timeout, "clog disk hang".
_STALLED_BY_FULL_DISK = frozenset({4012, 1205, 6325})

# on the embedded engine they go through its C client (engine.native_reader), which returns every column as
# text. A statement that selects a BLOB (vectors, packed postings) must never be listed.
_TEXT_READS = tuple(
    head.strip()
    for head in (
        "SELECT scope_id, title, context_references, created_at, updated_at FROM scopes",
        "SELECT term, docs FROM fts_term_docs",
        "SELECT 1 FROM artifacts",
        "SELECT generation FROM vector_generations",
        SELECT_MEMORY.split("\nFROM artifacts a")[0],
        SELECT_ROW.split("\nFROM artifacts a")[0],
    )
)
