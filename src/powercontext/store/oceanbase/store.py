"""The OceanBase family store: ``Store``, ``FamilyStore`` and ``CodeStore`` on seekdb or an OceanBase cluster.

The write and read logic is the SQLite adapter's, run through a dialect-translating connection
(dialect.py), so both backends enforce exact revisions, lifecycle, merge, idempotency and
compare-and-set the same way, statement for statement. What differs lives here:

- transactions: a pymysql session per thread for reads (autocommit, read committed) and one writer
  session per process; every write transaction first locks the ``store_locks`` row, so writers of
  several Server processes on one database queue like SQLite's single writer (a second writer's
  compare-and-set sees the first's commit and answers 409, never a lost update);
- full text: exact postings and FTS5's BM25 recomputed (fulltext.py), so rankings and Receipts match;
- vectors: the same exact in-memory matrix as SQLite, kept current by the ``vector_generations``
  counter every write bumps, so a write is searchable by the next request (read-your-writes).
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pymysql

from powercontext.domain.families import EXPERIENCE, TOPIC_MEMORY
from powercontext.domain.identity import ArtifactKey
from powercontext.store.base import MemoryRecord, NewMemory, ScoredExperience, ScoredMemory, ScoredTopic
from powercontext.store.code import ScoredCodeChunk
from powercontext.store.errors import IdempotencyConflict, StoreUnavailable
from powercontext.store.location import StoreLocation
from powercontext.store.oceanbase import fulltext, native_fulltext, native_vectors
from powercontext.store.oceanbase.dialect import Connection
from powercontext.store.oceanbase.engine import connect, ensure_database, execute_alone, native_reader
from powercontext.store.oceanbase.fulltext import FtsWriter
from powercontext.store.oceanbase.migrations import apply_migrations
from powercontext.store.sqlite import code as sqlite_code
from powercontext.store.sqlite import experiences as sqlite_experiences
from powercontext.store.sqlite import topics as sqlite_topics
from powercontext.store.sqlite.driver import sqlite
from powercontext.store.sqlite.family_rows import _SELECT as _SELECT_FAMILY_ROW
from powercontext.store.sqlite.family_rows import _row as _family_row
from powercontext.store.sqlite.family_rows import active_heads
from powercontext.store.sqlite.family_rows import scope_tag as family_scope_tag
from powercontext.store.sqlite.store import (
    _ARTIFACT_VECTORS,
    _CODE_VECTORS,
    _SELECT_MEMORY,
    FAMILY,
    SqliteStore,
    TermCounts,
    _affordable_terms,
    _generation,
    _now,
    _record,
    new_artifact_id,
    scope_tag,
)
from powercontext.store.sqlite.vectors import Vector, VectorCache, VectorChanges, load_matrix, to_blob


class _Changes(VectorChanges):
    """``VectorChanges`` without SQLite's ``RETURNING``: the bumped row is read back inside the transaction."""

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


class OceanBaseStore(SqliteStore):
    """``Store``, ``FamilyStore`` and ``CodeStore`` over seekdb (embedded or server) or OceanBase. Thread-safe."""

    def __init__(self, location: StoreLocation) -> None:
        # Not the base initializer: it opens a SQLite file. Same attributes, MySQL-protocol sessions.
        self.location = location
        self.path = location.path or location.display()  # type: ignore[assignment]
        self._write_lock = threading.Lock()
        self._local = threading.local()
        self._readers: list[Any] = []
        self._readers_lock = threading.Lock()
        self._closed = False
        self._vectors = VectorCache()
        self._changes = _Changes()
        self._fts = FtsWriter()
        self._mirror = native_vectors.VectorMirror(self._run_ddl)
        ensure_database(location)
        self._writer = self._connect()
        apply_migrations(self._writer, _now())
        self._fts.native = native_fulltext.prepare(self._writer, location.fulltext == "native", location.display())
        self._mirror.native = native_vectors.prepare(self._writer, location.vectors == "native", location.display())
        self._mirror.know(self._writer)

    # -- connections ---------------------------------------------------------------------------

    def _connect(self) -> Connection:
        return Connection(connect(self.location, self.location.database), self._fts, self._mirror)

    def _connect_reader(self) -> Connection:
        raw = connect(self.location, self.location.database)
        raw.autocommit(True)
        return Connection(raw, self._fts, self._mirror, native_reader(self.location), _TEXT_READS)

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
        with self._write_lock:
            if self._closed:
                raise StoreUnavailable()
            conn: Connection = self._writer
            try:
                if not conn.raw.open:
                    conn = self._writer = self._connect()
                conn.raw.begin()
                # The cross-process writer lock (see migrations): waits, up to the lock timeout, for another writer.
                locked = {
                    row[0]
                    for row in conn.query(
                        "SELECT name FROM store_locks WHERE name IN ('writer', %s, %s) FOR UPDATE",
                        (native_fulltext.LOCK_ROW, native_vectors.LOCK_ROW),
                    ).fetchall()
                }
                # Another process may have made the database native after this one started.
                self._fts.native = self._fts.native or native_fulltext.LOCK_ROW in locked
                self._mirror.native = self._mirror.native or native_vectors.LOCK_ROW in locked
            except (pymysql.MySQLError, sqlite.Error) as exc:
                self._abandon(conn)
                raise StoreUnavailable() from exc
            self._changes = _Changes()
            self._fts.discard()
            try:
                yield conn
                self._fts.flush(conn)
                conn.raw.commit()
            except BaseException as exc:
                self._fts.discard()
                self._abandon(conn)
                if isinstance(exc, pymysql.MySQLError | sqlite.OperationalError):
                    raise StoreUnavailable() from exc
                raise
            self._vectors.apply(self._changes)

    @staticmethod
    def _abandon(conn: Connection) -> None:
        try:
            conn.raw.rollback()
        except pymysql.MySQLError:
            conn.raw.close()  # a broken session is replaced by the next write

    def ready(self) -> bool:
        try:
            self._reader().execute("SELECT 1 FROM schema_migrations LIMIT 1").fetchone()
        except (sqlite.Error, StoreUnavailable, pymysql.MySQLError):
            return False
        return True

    def close(self) -> None:
        self._closed = True
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        with self._write_lock:
            self._writer.raw.close()

    # -- batch writes --------------------------------------------------------------------------

    def create_memories(self, scope_id: str, items: Sequence[NewMemory]) -> list[MemoryRecord]:
        """The SQLite adapter's batch semantics with multi-row statements.

        Every statement is a round trip to the engine (~1-4 ms each on a busy 2-core machine), so rows
        are written per table, not per memory: 500 memories take a handful of statements, not 2,500.
        A key repeated inside one batch replays (same body) or conflicts, as it does on SQLite.
        """
        now = _now()
        with self._write() as conn:
            self._require_scope(conn, scope_id)
            results: list[MemoryRecord] = []
            fresh: list[tuple[int, NewMemory, str]] = []  # (position in results, item, artifact id)
            batch_keys: dict[str, tuple[str, int]] = {}  # idempotency key -> (digest, position)
            for item in items:
                key = item.idempotency_key
                if key is not None:
                    if key in batch_keys:
                        digest, position = batch_keys[key]
                        if digest != item.request_digest:
                            raise IdempotencyConflict()
                        results.append(results[position])
                        continue
                    replay = self._replay(conn, scope_id, item)
                    if replay is not None:
                        results.append(replay)
                        continue
                    batch_keys[key] = (item.request_digest, len(results))
                artifact_id = new_artifact_id()
                record_key = ArtifactKey(scope_id, FAMILY, artifact_id, 1)
                fresh.append((len(results), item, artifact_id))
                record = MemoryRecord(record_key, 1, "active", item.kind, item.text, item.tags, now, None, ())
                results.append(dataclasses.replace(record, observed_at=item.observed_at))
            if fresh:
                self._insert_fresh(conn, scope_id, fresh, now)
        return results

    def _insert_fresh(self, conn: Connection, scope_id: str, fresh: list[tuple[int, NewMemory, str]], now: str) -> None:
        # One multi-row INSERT per table (measured: 10,000 single-row INSERTs took 3.9 s of a 17 s import).
        # The ids are chosen here, after the highest one, not read back: this transaction holds the
        # writer lock, so no other writer inserts artifacts meanwhile, and in ORDER auto-increment mode
        # (OceanBase's default) the engine moves AUTO_INCREMENT past explicit ids (measured on seekdb);
        # reading 500 ids back cost ~14 ms per batch.
        top = conn.query("SELECT COALESCE(MAX(id), 0) FROM artifacts").fetchone()
        assert top is not None
        rowids = {artifact_id: int(top[0]) + n for n, (_, _, artifact_id) in enumerate(fresh, start=1)}
        conn.insert_rows(
            "INSERT INTO artifacts (id, scope_id, family, artifact_id, head_revision, state, created_at, updated_at)"
            " VALUES ",
            [(rowids[a], scope_id, FAMILY, a, 1, "active", now, now) for _, _, a in fresh],
        )
        conn.insert_rows(
            "INSERT INTO revisions (artifact, revision, kind, body, tags, created_at, observed_at) VALUES ",
            [
                (rowids[a], 1, item.kind, item.text, json.dumps(list(item.tags)), now, item.observed_at)
                for _, item, a in fresh
            ],
        )
        counts = TermCounts(scope_id)
        if any(item.embedding is not None for _, item, _ in fresh):
            # A cached vector matrix holds embedded active heads only: fresh memories without an
            # embedding leave it as it is, so only a batch that carries vectors bumps the generation
            # (two statements, ~6 ms of a batch on a busy engine).
            self._changes.touch(conn, scope_id, FAMILY)
        embeddings = []
        for _, item, artifact_id in fresh:
            rowid = rowids[artifact_id]
            counts.index(conn, rowid, item.text)
            if item.embedding is not None:
                e = item.embedding
                embeddings.append((rowid, 1, e.model_id, to_blob(e.vector)))
                self._changes.ops.append((scope_id, FAMILY, rowid, e.model_id, e.vector))
        if embeddings:
            conn.executemany(
                "INSERT INTO artifact_embeddings (artifact, revision, model_id, vector) VALUES (?, ?, ?, ?)",
                embeddings,
            )
        keyed = [(a, item) for _, item, a in fresh if item.idempotency_key is not None]
        if keyed:
            conn.executemany(
                "INSERT INTO idempotency_keys (scope_id, idem_key, request_digest, artifact) VALUES (?, ?, ?, ?)",
                [(scope_id, item.idempotency_key, item.request_digest, rowids[a]) for a, item in keyed],
            )
        counts.flush(conn)

    # -- full text -----------------------------------------------------------------------------

    def _ranked(
        self,
        conn: Connection,
        table: str,
        tag: str,
        terms: Sequence[str],
        limit: int,
        window: fulltext.Window = "rank",
        window_size: int = 0,
    ) -> list[tuple[float, int]]:
        """(score, doc_id) best first: the engine's FULLTEXT index on a native database, else exact BM25."""
        if self._fts.native:
            # The engine ranks every match itself: no window is needed to bound the work.
            return native_fulltext.search(conn, table, tag, terms, min(limit, 1 << 16))
        return fulltext.search(conn, table, tag, terms, limit, window, window_size, self._fts.segments)

    def search_text(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredMemory]:
        conn = self._reader()
        terms, rankable = _affordable_terms(conn, scope_id, terms)
        if not terms:
            return []
        window: fulltext.Window = "rank" if rankable else "newest"
        hits = self._ranked(conn, "atomic_memory_fts", scope_tag(scope_id), terms, limit, window)
        if not hits:
            return []
        marks = ",".join("?" * len(hits))
        rows = conn.execute(
            _SELECT_MEMORY + f" WHERE a.id IN ({marks}) AND r.revision = a.head_revision AND a.state = 'active'"
            " AND a.scope_id = ?",
            [doc_id for _, doc_id in hits] + [scope_id],
        ).fetchall()
        by_id = {row[0]: _record(row) for row in rows}
        return [ScoredMemory(by_id[doc_id], score) for score, doc_id in hits if doc_id in by_id]

    @staticmethod
    def _has_active(conn: Connection, scope_id: str, family: str) -> bool:
        # Most Scopes have no Topic Memory or Experience: one index probe spares the four statements of a
        # full-text search on every prepare of such a Scope (the SQLite adapter probes for the same reason).
        row = conn.execute(
            "SELECT 1 FROM artifacts WHERE scope_id = ? AND family = ? AND state = 'active' LIMIT 1", (scope_id, family)
        ).fetchone()
        return row is not None

    def search_topics(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredTopic]:
        conn = self._reader()
        if not self._has_active(conn, scope_id, TOPIC_MEMORY):
            return []
        hits = self._ranked(conn, "topic_memory_fts", family_scope_tag(scope_id), terms, limit)
        rows = active_heads(conn, [doc_id for _, doc_id in hits])
        return [
            ScoredTopic(sqlite_topics._record(rows[doc_id]), score)
            for score, doc_id in hits
            if doc_id in rows and rows[doc_id].family == TOPIC_MEMORY
        ]

    def search_experiences(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredExperience]:
        conn = self._reader()
        if not self._has_active(conn, scope_id, EXPERIENCE):
            return []
        hits = self._ranked(conn, "experience_fts", family_scope_tag(scope_id), terms, limit)
        rows = active_heads(conn, [doc_id for _, doc_id in hits])
        return [
            ScoredExperience(sqlite_experiences._experience(rows[doc_id]), score)
            for score, doc_id in hits
            if doc_id in rows and rows[doc_id].family == EXPERIENCE
        ]

    def search_code(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredCodeChunk]:
        conn = self._reader()
        terms, rankable = self._affordable_code_terms(conn, scope_id, terms)
        if not terms or limit < 1:
            return []
        budget = sqlite_code.POSTING_BUDGET
        tag = sqlite_code.code_scope_tag(scope_id)
        window: fulltext.Window = "rank" if rankable else "first"
        # Every ranked match, so ties break by path and line exactly as the SQLite query orders them.
        hits = self._ranked(conn, "code_fts", tag, terms, budget if not rankable else 1 << 30, window, budget)
        if not hits:
            return []
        by_id = sqlite_code.chunk_records(conn, [doc_id for _, doc_id in hits], scope_id)
        ranked = sorted(
            (ScoredCodeChunk(by_id[doc_id], score) for score, doc_id in hits if doc_id in by_id),
            key=lambda s: (-s.score, s.chunk.path, s.chunk.start_line),
        )
        return ranked[:limit]

    @staticmethod
    def _affordable_code_terms(conn: Connection, scope_id: str, terms: Sequence[str]) -> tuple[list[str], bool]:
        """The SQLite adapter's rule (store/sqlite/code.py ``_affordable_terms``) over the Scope's postings."""
        if not terms:
            return [], True
        sizes = conn.execute(
            "SELECT COALESCE(SUM(chunk_count), 0) FROM code_trees WHERE scope_id = ?", (scope_id,)
        ).fetchone()
        assert sizes is not None
        scope_chunks = int(sizes[0])
        budget = sqlite_code.POSTING_BUDGET
        if scope_chunks <= budget:
            return list(terms), True
        docs = fulltext.term_documents(conn, "code_fts", sqlite_code.code_scope_tag(scope_id), terms)
        kept: list[str] = []
        total = 0
        present = [t for t in terms if fulltext.posting_term(t) in docs]
        for term in sorted(present, key=lambda t: docs[fulltext.posting_term(t)]):
            count = docs[fulltext.posting_term(term)]
            if kept and (2 * count >= scope_chunks or total + count > budget):
                break
            kept.append(term)
            total += count
        return kept, total <= budget

    # -- vectors -------------------------------------------------------------------------------

    def search_vector(self, scope_id: str, model_id: str, vector: Vector, limit: int) -> list[ScoredMemory]:
        """Active heads of the Scope by cosine similarity to ``vector``, among those embedded by ``model_id``."""
        hits, rows = self._vector_rows(scope_id, FAMILY, model_id, vector, limit, _SELECT_MEMORY)
        by_rowid = {row[0]: _record(row) for row in rows}
        return [ScoredMemory(by_rowid[rowid], score) for rowid, score in hits if rowid in by_rowid]

    def search_topic_vector(self, scope_id: str, model_id: str, vector: Vector, limit: int) -> list[ScoredTopic]:
        """Active Topic Memory heads of one Scope by cosine similarity, among those embedded by ``model_id``."""
        hits, raw = self._vector_rows(scope_id, TOPIC_MEMORY, model_id, vector, limit, _SELECT_FAMILY_ROW)
        rows = {row.rowid: row for row in map(_family_row, raw)}
        return [ScoredTopic(sqlite_topics._record(rows[rowid]), score) for rowid, score in hits if rowid in rows]

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
        generation = _generation(conn, scope_id, family)
        matrix = self._vectors.get(matrix_key, generation)
        if matrix is None:
            # Rows read after the generation can only be newer than it: the matrix is labelled with the
            # older generation, so a write that raced this load forces the next search to rebuild.
            if family == "code":
                rows = conn.execute(_CODE_VECTORS, (scope_id, model_id)).fetchall()
            else:
                rows = conn.execute(_ARTIFACT_VECTORS, (scope_id, family, model_id)).fetchall()
            matrix = load_matrix(rows, len(vector), generation)
            self._vectors.install(matrix_key, matrix)
        return matrix.top(vector, limit)


# The prepare path's reads whose columns are all text or numbers (the statement text up to its first table):
# on the embedded engine they go through its C client (engine.native_reader), which returns every column as
# text. A statement that selects a BLOB (vectors, packed postings) must never be listed.
_TEXT_READS = tuple(
    head.strip()
    for head in (
        "SELECT scope_id, title, context_references, created_at, updated_at FROM scopes",
        "SELECT term, docs FROM fts_term_docs",
        "SELECT 1 FROM artifacts",
        "SELECT generation FROM vector_generations",
        _SELECT_MEMORY.split("\nFROM artifacts a")[0],
        _SELECT_FAMILY_ROW.split("\nFROM artifacts a")[0],
    )
)


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
