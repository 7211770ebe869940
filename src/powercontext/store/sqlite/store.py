"""SQLite adapter of the ``Store`` protocol.

One writer connection behind a lock serializes writes inside this process (so concurrent HTTP
writers queue instead of meeting "database is locked"); a busy timeout covers other processes.
Readers use one connection per thread and never block the writer (WAL).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import secrets
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from powercontext.domain.identity import ArtifactKey
from powercontext.domain.lifecycle import LifecycleAction, TransitionRefused, next_state
from powercontext.store.base import (
    Embedding,
    EmbeddingStatus,
    EmbeddingTask,
    MemoryRecord,
    NewMemory,
    ScopeRecord,
    ScoredMemory,
)
from powercontext.store.errors import (
    ArtifactNotFound,
    IdempotencyConflict,
    InvalidMerge,
    InvalidReference,
    NotActive,
    ReferencedScopeNotFound,
    RevisionConflict,
    RevisionNotFound,
    ScopeExists,
    ScopeNotFound,
    StoreUnavailable,
)
from powercontext.store.sqlite import scope_fts
from powercontext.store.sqlite.code import SqliteCodeStore
from powercontext.store.sqlite.driver import sqlite
from powercontext.store.sqlite.families import SqliteFamilies
from powercontext.store.sqlite.migrations import apply_migrations
from powercontext.store.sqlite.vectors import Vector, VectorCache, VectorChanges, load_matrix
from powercontext.text.tokenize import terms as index_terms

FAMILY: Final = "atomic-memory"
# Families whose heads carry embeddings (their revisions.body is the text that was embedded).
EMBEDDED_FAMILIES: Final = "('atomic-memory', 'topic-memory')"
_BUSY_TIMEOUT_MS = 10_000
POSTING_BUDGET = 8_000
# A reserved term (the tokenizer never yields it) whose count is the Scope's number of active heads.
ACTIVE_DOCS = ""
# In a small Scope a word in half the memories is still a topic, not a stop word.
COMMON_TERM_MIN_DOCS = 1_000
_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"

_SELECT_MEMORY = """
SELECT a.id, a.scope_id, a.artifact_id, r.revision, a.head_revision, a.state, r.kind, r.body, r.tags,
       r.created_at, a.merged_into, r.merged_from, r.observed_at
FROM artifacts a JOIN revisions r ON r.artifact = a.id
"""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_artifact_id() -> str:
    """``am_`` + 26 Crockford base32 characters of 128 random bits."""
    value = int.from_bytes(secrets.token_bytes(16), "big")
    chars = []
    for _ in range(26):
        value, rem = divmod(value, 32)
        chars.append(_CROCKFORD[rem])
    return "am_" + "".join(chars)


def scope_tag(scope_id: str) -> str:
    # A single FTS term standing for the Scope; hex keeps it one unicode61 token.
    return "s" + hashlib.sha256(scope_id.encode("utf-8")).hexdigest()[:24]


def _match_expression(terms: Sequence[str]) -> str:
    # The Scope's own table holds only its rows: no scope_tag filter (its phrase added exactly 0.0 to bm25()).
    quoted = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    return f"terms : ( {quoted} )"


class SqliteStore(SqliteFamilies, SqliteCodeStore):
    """The embedded default store (``Store``, ``FamilyStore``, ``PromptStore``, ``CodeStore``). Thread-safe."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._write_lock = threading.Lock()
        self._local = threading.local()
        self._readers: list[Any] = []
        self._readers_lock = threading.Lock()
        self._closed = False
        self._vectors = VectorCache()
        self._changes = VectorChanges()
        self._writer = self._connect()
        self._writer.execute("PRAGMA journal_mode = WAL")
        apply_migrations(self._writer, _now())

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
        with self._write_lock:
            if self._closed:
                raise StoreUnavailable()
            conn = self._writer
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite.OperationalError as exc:  # another process held the lock past the timeout
                raise StoreUnavailable() from exc
            self._changes = VectorChanges()
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            # Still under the write lock, so cached matrices see commits in order.
            self._vectors.apply(self._changes)

    def ready(self) -> bool:
        try:
            self._reader().execute("SELECT 1 FROM schema_migrations LIMIT 1").fetchone()
        except (sqlite.Error, StoreUnavailable):
            return False
        return True

    def close(self) -> None:
        self._closed = True
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        with self._write_lock:
            self._writer.close()

    # -- scopes --------------------------------------------------------------------------------

    def create_scope(self, scope_id: str, title: str, context_references: Sequence[str]) -> ScopeRecord:
        now = _now()
        with self._write() as conn:
            self._check_references(conn, scope_id, context_references)
            try:
                conn.execute(
                    "INSERT INTO scopes (scope_id, title, context_references, created_at, updated_at)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (scope_id, title, json.dumps(list(context_references)), now, now),
                )
            except sqlite.IntegrityError as exc:
                raise ScopeExists() from exc
        return ScopeRecord(scope_id, title, tuple(context_references), now, now)

    def update_scope(
        self,
        scope_id: str,
        title: str,
        context_references: Sequence[str],
        keep: Callable[[str], bool] | None = None,
    ) -> ScopeRecord:
        now = _now()
        with self._write() as conn:
            row = conn.execute(
                "SELECT created_at, context_references FROM scopes WHERE scope_id = ?", (scope_id,)
            ).fetchone()
            if row is None:
                raise ScopeNotFound(scope_id)
            self._check_references(conn, scope_id, context_references)
            # Read and rewritten in one transaction, so a concurrent update cannot lose a kept reference.
            kept = [r for r in json.loads(row[1]) if keep is not None and keep(r) and r not in context_references]
            references = [*context_references, *kept]
            conn.execute(
                "UPDATE scopes SET title = ?, context_references = ?, updated_at = ? WHERE scope_id = ?",
                (title, json.dumps(references), now, scope_id),
            )
        return ScopeRecord(scope_id, title, tuple(references), row[0], now)

    @staticmethod
    def _check_references(conn: Any, scope_id: str, references: Sequence[str]) -> None:
        for index, ref in enumerate(references):
            if ref == scope_id:
                raise InvalidReference()
            if conn.execute("SELECT 1 FROM scopes WHERE scope_id = ?", (ref,)).fetchone() is None:
                raise ReferencedScopeNotFound(index, ref)

    def get_scope(self, scope_id: str) -> ScopeRecord:
        row = (
            self._reader()
            .execute(
                "SELECT scope_id, title, context_references, created_at, updated_at FROM scopes WHERE scope_id = ?",
                (scope_id,),
            )
            .fetchone()
        )
        if row is None:
            raise ScopeNotFound(scope_id)
        return ScopeRecord(row[0], row[1], tuple(json.loads(row[2])), row[3], row[4])

    def list_scopes(self) -> list[ScopeRecord]:
        rows = (
            self._reader()
            .execute("SELECT scope_id, title, context_references, created_at, updated_at FROM scopes ORDER BY scope_id")
            .fetchall()
        )
        return [ScopeRecord(r[0], r[1], tuple(json.loads(r[2])), r[3], r[4]) for r in rows]

    # -- writes --------------------------------------------------------------------------------

    def create_memories(self, scope_id: str, items: Sequence[NewMemory]) -> list[MemoryRecord]:
        now = _now()
        results: list[MemoryRecord] = []
        with self._write() as conn:
            self._require_scope(conn, scope_id)
            counts = TermCounts(scope_id)
            for item in items:
                if item.idempotency_key is not None:
                    replay = self._replay(conn, scope_id, item)
                    if replay is not None:
                        results.append(dataclasses.replace(replay, replayed=True))
                        continue
                artifact_id = new_artifact_id()
                cur = conn.execute(
                    "INSERT INTO artifacts (scope_id, family, artifact_id, head_revision, state, created_at,"
                    " updated_at) VALUES (?, ?, ?, 1, 'active', ?, ?)",
                    (scope_id, FAMILY, artifact_id, now, now),
                )
                rowid = cur.lastrowid
                tags = json.dumps(list(item.tags))
                conn.execute(
                    "INSERT INTO revisions (artifact, revision, kind, body, tags, created_at, observed_at)"
                    " VALUES (?, 1, ?, ?, ?, ?, ?)",
                    (rowid, item.kind, item.text, tags, now, item.observed_at),
                )
                counts.index(conn, rowid, item.text)
                self._changes.touch(conn, scope_id, FAMILY)
                if item.embedding is not None:
                    self._store_embedding(conn, scope_id, rowid, 1, item.embedding)
                if item.idempotency_key is not None:
                    conn.execute(
                        "INSERT INTO idempotency_keys (scope_id, idem_key, request_digest, artifact)"
                        " VALUES (?, ?, ?, ?)",
                        (scope_id, item.idempotency_key, item.request_digest, rowid),
                    )
                key = ArtifactKey(scope_id, FAMILY, artifact_id, 1)
                results.append(
                    MemoryRecord(
                        key, 1, "active", item.kind, item.text, item.tags, now, None, (), observed_at=item.observed_at
                    )
                )
            counts.flush(conn)
        return results

    def _replay(self, conn: Any, scope_id: str, item: NewMemory) -> MemoryRecord | None:
        row = conn.execute(
            "SELECT request_digest, artifact FROM idempotency_keys WHERE scope_id = ? AND idem_key = ?",
            (scope_id, item.idempotency_key),
        ).fetchone()
        if row is None:
            return None
        if row[0] != item.request_digest:
            raise IdempotencyConflict()
        found = conn.execute(_SELECT_MEMORY + " WHERE a.id = ? AND r.revision = 1", (row[1],)).fetchone()
        return _record(found)

    def revise_memory(
        self,
        scope_id: str,
        artifact_id: str,
        expected_revision: int,
        text: str,
        kind: str | None,
        tags: Sequence[str] | None,
        embedding: Embedding | None = None,
    ) -> MemoryRecord:
        now = _now()
        with self._write() as conn:
            head = self._head_row(conn, scope_id, artifact_id)
            rowid, head_revision, state = head[0], head[4], head[5]
            if state != "active":
                raise NotActive(f"only active Atomic Memories can be revised; this one is {state}")
            if expected_revision != head_revision:
                raise RevisionConflict(expected_revision, head_revision)
            new_kind = kind if kind is not None else head[6]
            new_tags = list(tags) if tags is not None else json.loads(head[8])
            revision = head_revision + 1
            conn.execute(
                "INSERT INTO revisions (artifact, revision, kind, body, tags, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (rowid, revision, new_kind, text, json.dumps(new_tags), now),
            )
            conn.execute("UPDATE artifacts SET head_revision = ?, updated_at = ? WHERE id = ?", (revision, now, rowid))
            counts = TermCounts(scope_id)
            counts.unindex(conn, rowid, head[7])
            counts.index(conn, rowid, text)
            counts.flush(conn)
            self._changes.unsearchable(conn, scope_id, FAMILY, rowid)
            if embedding is not None:
                self._store_embedding(conn, scope_id, rowid, revision, embedding)
        key = ArtifactKey(scope_id, FAMILY, artifact_id, revision)
        return MemoryRecord(key, revision, "active", new_kind, text, tuple(new_tags), now, None, ())

    def change_lifecycle(
        self, scope_id: str, artifact_id: str, action: LifecycleAction, expected_revision: int | None
    ) -> MemoryRecord:
        now = _now()
        with self._write() as conn:
            head = self._head_row(conn, scope_id, artifact_id)
            rowid, head_revision, state = head[0], head[4], head[5]
            if expected_revision is not None and expected_revision != head_revision:
                raise RevisionConflict(expected_revision, head_revision)
            try:
                target = next_state(action, state)
            except TransitionRefused as exc:
                raise NotActive(str(exc)) from exc
            conn.execute("UPDATE artifacts SET state = ?, updated_at = ? WHERE id = ?", (target, now, rowid))
            counts = TermCounts(scope_id)
            if state == "active":
                counts.unindex(conn, rowid, head[7])
                self._changes.unsearchable(conn, scope_id, FAMILY, rowid)
            if target == "active":
                counts.index(conn, rowid, head[7])
                self._changes.searchable_again(conn, scope_id, FAMILY, rowid, head_revision)
            counts.flush(conn)
            row = conn.execute(_SELECT_MEMORY + " WHERE a.id = ? AND r.revision = ?", (rowid, head_revision)).fetchone()
        return _record(row)

    def merge_memories(
        self,
        scope_id: str,
        sources: Sequence[tuple[str, int]],
        text: str,
        kind: str,
        tags: Sequence[str],
        embedding: Embedding | None = None,
    ) -> MemoryRecord:
        ids = [artifact_id for artifact_id, _ in sources]
        if len(set(ids)) != len(ids):
            raise InvalidMerge("each source Atomic Memory may appear only once in a merge")
        now = _now()
        with self._write() as conn:
            self._require_scope(conn, scope_id)
            heads = []
            for artifact_id, revision in sources:
                head = self._head_row(conn, scope_id, artifact_id)
                if head[5] != "active":
                    raise NotActive(f"only active Atomic Memories can be merged; {artifact_id} is {head[5]}")
                if head[4] != revision:
                    raise RevisionConflict(revision, head[4])
                heads.append(head)
            merged_id = new_artifact_id()
            cur = conn.execute(
                "INSERT INTO artifacts (scope_id, family, artifact_id, head_revision, state, created_at, updated_at)"
                " VALUES (?, ?, ?, 1, 'active', ?, ?)",
                (scope_id, FAMILY, merged_id, now, now),
            )
            merged_rowid = cur.lastrowid
            merged_from = [
                {"scope_id": scope_id, "artifact_id": artifact_id, "revision": revision}
                for artifact_id, revision in sources
            ]
            conn.execute(
                "INSERT INTO revisions (artifact, revision, kind, body, tags, merged_from, created_at)"
                " VALUES (?, 1, ?, ?, ?, ?, ?)",
                (merged_rowid, kind, text, json.dumps(list(tags)), json.dumps(merged_from), now),
            )
            counts = TermCounts(scope_id)
            counts.index(conn, merged_rowid, text)
            self._changes.touch(conn, scope_id, FAMILY)
            if embedding is not None:
                self._store_embedding(conn, scope_id, merged_rowid, 1, embedding)
            for head in heads:
                conn.execute(
                    "UPDATE artifacts SET state = 'merged', merged_into = ?, updated_at = ? WHERE id = ?",
                    (merged_id, now, head[0]),
                )
                counts.unindex(conn, head[0], head[7])
                self._changes.unsearchable(conn, scope_id, FAMILY, head[0])
            counts.flush(conn)
        source_keys = tuple(ArtifactKey(scope_id, FAMILY, a, r) for a, r in sources)
        key = ArtifactKey(scope_id, FAMILY, merged_id, 1)
        return MemoryRecord(key, 1, "active", kind, text, tuple(tags), now, None, source_keys)

    # -- reads ---------------------------------------------------------------------------------

    @staticmethod
    def _require_scope(conn: Any, scope_id: str) -> None:
        if conn.execute("SELECT 1 FROM scopes WHERE scope_id = ?", (scope_id,)).fetchone() is None:
            raise ScopeNotFound(scope_id)

    def _head_row(self, conn: Any, scope_id: str, artifact_id: str) -> Any:
        row = conn.execute(
            _SELECT_MEMORY
            + " WHERE a.scope_id = ? AND a.family = ? AND a.artifact_id = ? AND r.revision = a.head_revision",
            (scope_id, FAMILY, artifact_id),
        ).fetchone()
        if row is None:
            self._require_scope(conn, scope_id)
            raise ArtifactNotFound()
        return row

    def read_head(self, scope_id: str, artifact_id: str) -> MemoryRecord:
        return _record(self._head_row(self._reader(), scope_id, artifact_id))

    def read_revision(self, scope_id: str, artifact_id: str, revision: int) -> MemoryRecord:
        conn = self._reader()
        row = conn.execute(
            _SELECT_MEMORY + " WHERE a.scope_id = ? AND a.family = ? AND a.artifact_id = ? AND r.revision = ?",
            (scope_id, FAMILY, artifact_id, revision),
        ).fetchone()
        if row is None:
            head = self._head_row(conn, scope_id, artifact_id)
            raise RevisionNotFound(head[4])
        return _record(row)

    def list_memories(
        self, scope_id: str, state: str | None, before: int | None, limit: int
    ) -> list[tuple[int, MemoryRecord]]:
        conn = self._reader()
        self._require_scope(conn, scope_id)
        sql = _SELECT_MEMORY + " WHERE a.scope_id = ? AND a.family = ? AND r.revision = a.head_revision"
        params: list[object] = [scope_id, FAMILY]
        if state is not None:
            sql += " AND a.state = ?"
            params.append(state)
        if before is not None:
            sql += " AND a.id < ?"
            params.append(before)
        params.append(limit)
        rows = conn.execute(sql + " ORDER BY a.id DESC LIMIT ?", params).fetchall()
        return [(int(row[0]), _record(row)) for row in rows]

    def search_text(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredMemory]:
        conn = self._reader()
        terms, rankable = _affordable_terms(conn, scope_id, terms)
        if not terms:
            return []
        # When even the rarest term is in too many memories to rank them all, take the newest matches
        # (a rowid walk, no scoring) and rank only those.
        window = "rank" if rankable else "rowid DESC"
        table = scope_fts.table_name("atomic_memory_fts", scope_tag(scope_id))
        try:
            rows = conn.execute(
                f"WITH hits AS (SELECT rowid AS id, bm25({table}, 0.0, 1.0) AS rank FROM {table}"
                f" WHERE {table} MATCH ? ORDER BY {window} LIMIT ?) "
                + _SELECT_MEMORY.replace("FROM artifacts a", "FROM hits JOIN artifacts a ON a.id = hits.id").replace(
                    "SELECT a.id", "SELECT hits.rank, a.id"
                )
                + " WHERE r.revision = a.head_revision AND a.state = 'active' AND a.scope_id = ? ORDER BY hits.rank",
                (_match_expression(terms), limit, scope_id),
            ).fetchall()
        except sqlite.OperationalError as exc:
            if scope_fts.missing_table(exc):
                return []
            raise
        # bm25() is lower-is-better; the public score is higher-is-better.
        return [ScoredMemory(_record(row[1:]), -row[0]) for row in rows]

    # -- vectors -------------------------------------------------------------------------------

    def _store_embedding(self, conn: Any, scope_id: str, rowid: int, revision: int, embedding: Embedding) -> None:
        self._changes.store(conn, scope_id, FAMILY, rowid, revision, embedding.model_id, embedding.vector)

    def search_vector(self, scope_id: str, model_id: str, vector: Vector, limit: int) -> list[ScoredMemory]:
        """Active heads of the Scope by cosine similarity to ``vector``, among those embedded by ``model_id``."""
        conn = self._reader()
        hits = self._vector_hits(conn, scope_id, FAMILY, model_id, vector, limit)
        if not hits:
            return []
        marks = ",".join("?" * len(hits))
        rows = conn.execute(
            _SELECT_MEMORY + f" WHERE a.id IN ({marks}) AND r.revision = a.head_revision AND a.state = 'active'",
            [rowid for rowid, _ in hits],
        ).fetchall()
        by_rowid = {row[0]: _record(row) for row in rows}
        return [ScoredMemory(by_rowid[rowid], score) for rowid, score in hits if rowid in by_rowid]

    def _vector_hits(
        self, conn: Any, scope_id: str, family: str, model_id: str, vector: Vector, limit: int
    ) -> list[tuple[int, float]]:
        """(rowid, cosine) of the best searchable rows of one (Scope, family) embedded by ``model_id``: artifact
        rows (active heads) for the artifact families, chunk rows for ``code``."""
        matrix_key = (scope_id, family, model_id)
        matrix = self._vectors.get(matrix_key, _generation(conn, scope_id, family))
        if matrix is None:
            conn.execute("BEGIN")  # one snapshot for the generation and the rows it describes
            try:
                generation = _generation(conn, scope_id, family)
                if family == "code":
                    rows = conn.execute(_CODE_VECTORS, (scope_id, model_id))
                else:
                    rows = conn.execute(_ARTIFACT_VECTORS, (scope_id, family, model_id))
                matrix = load_matrix(rows, len(vector), generation)
            finally:
                conn.execute("COMMIT")
            self._vectors.install(matrix_key, matrix)
        return matrix.top(vector, limit)

    def embedding_backlog(self, model_id: str, after_rowid: int, limit: int) -> list[EmbeddingTask]:
        """Active heads after ``after_rowid`` (in rowid order) with no embedding by ``model_id``."""
        rows = (
            self._reader()
            .execute(
                "SELECT a.id, a.scope_id, a.artifact_id, a.head_revision, r.body, a.family FROM artifacts a"
                " JOIN revisions r ON r.artifact = a.id AND r.revision = a.head_revision"
                " LEFT JOIN artifact_embeddings e ON e.artifact = a.id AND e.revision = a.head_revision"
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
                " LEFT JOIN artifact_embeddings e ON e.artifact = a.id AND e.revision = a.head_revision"
                f" WHERE a.family IN {EMBEDDED_FAMILIES} AND a.state = 'active'",
                (model_id,),
            )
            .fetchone()
        )
        return EmbeddingStatus(active_heads=row[0], current_model=row[2], other_models=row[1] - row[2])


_ARTIFACT_VECTORS = (
    "SELECT a.id, e.vector FROM artifacts a"
    " JOIN artifact_embeddings e ON e.artifact = a.id AND e.revision = a.head_revision"
    " WHERE a.scope_id = ? AND a.family = ? AND a.state = 'active' AND e.model_id = ?"
)
_CODE_VECTORS = (
    "SELECT c.id, e.vector FROM code_chunk_embeddings e JOIN code_chunks c ON c.id = e.chunk"
    " JOIN code_files f ON f.id = c.file JOIN code_trees t ON t.id = f.tree WHERE t.scope_id = ? AND e.model_id = ?"
)


def _generation(conn: Any, scope_id: str, family: str) -> int:
    row = conn.execute(
        "SELECT generation FROM vector_generations WHERE scope_id = ? AND family = ?", (scope_id, family)
    ).fetchone()
    return 0 if row is None else int(row[0])


def _affordable_terms(conn: Any, scope_id: str, terms: Sequence[str]) -> tuple[list[str], bool]:
    """The query terms worth scoring, rarest first, and whether BM25 ranking is affordable.

    BM25 cost grows with the postings of every OR-ed term, while a common term adds almost nothing
    to the ranking: found in half of a large Scope or more, its IDF is clamped to ~0. So the rarest
    term is always kept, and further terms are added, rarest first, while they are not that common
    and their document counts fit ``POSTING_BUDGET``. Terms found nowhere are dropped: a query of only those
    is a zero-hit search that scans nothing.
    """
    if not terms:
        return [], True
    marks = ",".join("?" * (len(terms) + 1))
    counts = dict(
        conn.execute(
            f"SELECT term, docs FROM fts_term_docs WHERE scope_id = ? AND term IN ({marks})",
            [scope_id, ACTIVE_DOCS, *terms],
        )
    )
    active = counts.pop(ACTIVE_DOCS, 0)
    present = sorted((t for t in terms if t in counts), key=lambda t: counts[t])
    kept: list[str] = []
    total = 0
    for term in present:
        docs = counts[term]
        common = active >= COMMON_TERM_MIN_DOCS and 2 * docs >= active
        if kept and (common or total + docs > POSTING_BUDGET):
            break
        kept.append(term)
        total += docs
    return kept, total <= POSTING_BUDGET


class TermCounts:
    """The ``fts_term_docs`` changes of one write transaction, applied once by ``flush``."""

    def __init__(self, scope_id: str) -> None:
        self.scope_id = scope_id
        self.deltas: Counter[str] = Counter()
        self._table: str | None = None  # the Scope's FTS5 table, once this transaction made sure it exists

    def _fts_table(self, conn: Any) -> str:
        if self._table is None:
            self._table = scope_fts.ensure_table(conn, "atomic_memory_fts", scope_tag(self.scope_id))
        return self._table

    def index(self, conn: Any, rowid: int, text: str) -> None:
        """Make one active head searchable."""
        terms = index_terms(text)
        conn.execute(
            f"INSERT INTO {self._fts_table(conn)} (rowid, scope_tag, terms) VALUES (?, ?, ?)",
            (rowid, scope_tag(self.scope_id), " ".join(terms)),
        )
        self.deltas.update({ACTIVE_DOCS, *terms})

    def unindex(self, conn: Any, rowid: int, text: str) -> None:
        """Remove one head from search; ``text`` is the body it was indexed with."""
        conn.execute(f"DELETE FROM {self._fts_table(conn)} WHERE rowid = ?", (rowid,))
        self.deltas.subtract({ACTIVE_DOCS, *index_terms(text)})

    def flush(self, conn: Any) -> None:
        gained = [(self.scope_id, t, d) for t, d in self.deltas.items() if d > 0]
        lost = [(d, self.scope_id, t) for t, d in self.deltas.items() if d < 0]
        conn.executemany(
            "INSERT INTO fts_term_docs (scope_id, term, docs) VALUES (?, ?, ?)"
            " ON CONFLICT (scope_id, term) DO UPDATE SET docs = docs + excluded.docs",
            gained,
        )
        # Rows that reach zero go first, so no row ever holds a zero count.
        conn.executemany("DELETE FROM fts_term_docs WHERE docs + ? = 0 AND scope_id = ? AND term = ?", lost)
        conn.executemany("UPDATE fts_term_docs SET docs = docs + ? WHERE scope_id = ? AND term = ?", lost)
        self.deltas.clear()


def _record(row: Any) -> MemoryRecord:
    (_, scope_id, artifact_id, revision, head, state, kind, body, tags, created, merged_into, merged_from, observed) = (
        row
    )
    # Most memories have no tags and no merge sources: skipping json.loads for "[]" matters on a 30-item pool.
    sources = (
        ()
        if merged_from == "[]"
        else tuple(ArtifactKey(m["scope_id"], FAMILY, m["artifact_id"], m["revision"]) for m in json.loads(merged_from))
    )
    return MemoryRecord(
        ArtifactKey(scope_id, FAMILY, artifact_id, revision),
        head,
        state,
        kind,
        body,
        () if tags == "[]" else tuple(json.loads(tags)),
        created,
        merged_into,
        sources,
        observed_at=observed,
    )
