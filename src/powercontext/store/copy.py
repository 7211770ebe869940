"""Copy a whole store to another backend, table by table, in resumable batches.

Every logical table is copied row for row, ids included, so Artifact addresses, revisions, lifecycle
states, Candidates, Profiles, code registrations and embeddings (with their model ids) arrive unchanged.
Each batch is one destination transaction, and batches follow the primary key: an interrupted copy is
resumed by running it again (each table continues after the destination's highest key).

So a destination must be new, or an earlier, interrupted run of this same copy: before writing anything, every
table of the destination must hold exactly the source's rows up to its highest key, column for column (what a
resume relies on). Any other data (another store, a source changed since) is refused with
``DestinationNotFromSource``, and nothing is written; resuming into it would merge the two stores' rows.

The full-text indexes are rebuilt, not copied (SQLite's are contentless): a head revision is indexed through the
destination's ``FullTextIndex`` in the same transaction that copies it, a code chunk likewise with terms from
``code_terms``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any, Final

from powercontext.store.core.reindex import index_chunk, index_head
from powercontext.store.errors import StoreError

# (table, primary key, columns) in an order that satisfies every reference.
TABLES: Final[tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]] = (
    ("scopes", ("scope_id",), ("scope_id", "title", "context_references", "created_at", "updated_at")),
    (
        "artifacts",
        ("id",),
        (
            "id",
            "scope_id",
            "family",
            "artifact_id",
            "head_revision",
            "state",
            "merged_into",
            "created_at",
            "updated_at",
        ),
    ),
    (
        "revisions",
        ("artifact", "revision"),
        ("artifact", "revision", "kind", "body", "tags", "merged_from", "created_at", "fields", "observed_at"),
    ),
    ("idempotency_keys", ("scope_id", "idem_key"), ("scope_id", "idem_key", "request_digest", "artifact")),
    ("fts_term_docs", ("scope_id", "term"), ("scope_id", "term", "docs")),
    ("artifact_embeddings", ("artifact", "revision"), ("artifact", "revision", "model_id", "vector")),
    ("vector_generations", ("scope_id", "family"), ("scope_id", "family", "generation")),
    (
        "artifact_candidates",
        ("id",),
        (
            "id",
            "scope_id",
            "family",
            "candidate_id",
            "candidate_revision",
            "status",
            "fields",
            "tags",
            "target_artifact_id",
            "expected_revision",
            "reject_reason",
            "result_artifact_id",
            "result_revision",
            "created_at",
            "updated_at",
        ),
    ),
    (
        "code_trees",
        ("id",),
        (
            "id",
            "scope_id",
            "fingerprint",
            "kind",
            "root_path",
            "max_file_bytes",
            "chunk_count",
            "created_at",
            "indexed_at",
        ),
    ),
    (
        "code_files",
        ("id",),
        ("id", "tree", "path", "file_sha256", "language", "size_bytes", "line_count"),
    ),
    ("code_chunks", ("id",), ("id", "file", "start_line", "end_line", "snippet_sha256", "text")),
    ("code_chunk_embeddings", ("chunk",), ("chunk", "model_id", "vector")),
    (
        "sources",
        ("id",),
        (
            "id",
            "scope_id",
            "source_id",
            "kind",
            "content",
            "content_digest",
            "redactions",
            "origin_host",
            "origin_session",
            "origin_turn",
            "observed_at",
            "created_at",
            "status",
            "reason",
            "attempts",
            "lease_owner",
            "lease_until",
            "next_attempt_at",
        ),
    ),
    ("revision_sources", ("artifact", "revision", "source_row"), ("artifact", "revision", "source_row")),
    ("extraction_policies", ("scope_id",), ("scope_id", "explicit", "model", "updated_at")),
    ("purged_artifacts", ("artifact",), ("artifact", "purged_at")),
)

# (path, chunk text) -> (path terms, chunk terms), both space-separated: the code indexer's tokenizer.
CodeTerms = Callable[[str, str], tuple[str, str]]
Progress = Callable[[str, int, int], None]  # (table, rows copied so far in all tables, total rows)


@dataclass(frozen=True, slots=True)
class TableCount:
    table: str
    source: int
    destination: int

    @property
    def matches(self) -> bool:
        return self.source == self.destination


class DestinationNotFromSource(Exception):
    """The destination holds rows that an earlier run of this copy did not write; nothing was written to it."""

    code = "store-copy-conflict"

    def __init__(self, table: str) -> None:
        super().__init__(
            f"the destination holds data that is not from this source (table {table}); copy into an empty store "
            "or a new location (a copy that was interrupted resumes only while the source is unchanged)"
        )
        self.table = table


class CopyFailed(Exception):
    """A store or driver error during the copy (``table``: the one being copied or checked); the batches written
    before it are kept (rerun to resume)."""

    code = "store-error"

    def __init__(self, table: str, cause: Exception, doing: str = "copying") -> None:
        reason = str(getattr(cause, "code", "") or type(cause).__name__)
        detail = str(cause).splitlines()[0][:200] if str(cause) else ""
        super().__init__(
            f"{doing} {table} failed: {reason}: {detail}; the finished batches are kept: "
            "fix the cause and rerun the same command to resume"
        )
        self.table = table


def count_rows(store: Any) -> dict[str, int]:
    """Rows per logical table."""
    conn = store._reader()
    return {table: int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]) for table, _, _ in TABLES}


def copy_store(
    source: Any,
    destination: Any,
    code_terms: CodeTerms,
    batch_size: int = 500,
    progress: Progress | None = None,
    checked: bool = False,
) -> list[TableCount]:
    """Copy every table of ``source`` into ``destination`` (both open stores); returns the per-table counts.

    Refuses a destination with other data first (``refuse_foreign_rows``; ``checked``: the caller just did)."""
    if not checked:
        refuse_foreign_rows(source, destination, batch_size)
    table = TABLES[0][0]
    try:
        totals = count_rows(source)
        grand_total = sum(totals.values())
        done = sum(count_rows(destination).values())
        for table, key, columns in TABLES:
            while True:
                batch = _next_batch(source, destination, table, key, columns, batch_size)
                if not batch:
                    break
                _write_batch(destination, table, columns, batch, code_terms)
                done += len(batch)
                if progress is not None:
                    progress(table, done, grand_total)
        after = count_rows(destination)
    except (StoreError, *source._DRIVER_ERRORS, *destination._DRIVER_ERRORS) as exc:
        raise CopyFailed(table, exc) from exc
    return [TableCount(table, totals[table], after[table]) for table, _, _ in TABLES]


def _write_batch(
    destination: Any, table: str, columns: tuple[str, ...], batch: list[tuple[Any, ...]], code_terms: CodeTerms
) -> None:
    """One destination transaction: the rows, and the full-text entries and vector changes they bring."""
    with destination._write() as conn:
        marks = ", ".join("?" * len(columns))
        conn.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", batch)
        if table == "artifact_embeddings":
            destination._changes.embeddings_written(conn, batch)
        if table == "revisions":
            _index_heads(destination._fulltext, conn, batch)
        elif table == "code_chunks":
            _index_chunks(destination._fulltext, conn, batch, code_terms)


def refuse_foreign_rows(source: Any, destination: Any, batch_size: int = 500) -> None:
    """Raise ``DestinationNotFromSource`` unless every destination table holds exactly the source's rows up to
    the destination's highest key, in the same order and with the same values: a new store, or what an
    earlier run of this copy wrote. Reads the destination's rows once; writes nothing."""
    table = TABLES[0][0]
    try:
        for table, key, columns in TABLES:
            last = _last_key(destination, table, key)
            if last is None:
                continue
            theirs = _rows(destination, table, key, columns, None, batch_size)
            ours = _rows(source, table, key, columns, last, batch_size)
            for mine, other in zip_longest(ours, theirs):
                if mine is None or other is None or _plain(mine) != _plain(other):
                    raise DestinationNotFromSource(table)
    except (StoreError, *source._DRIVER_ERRORS, *destination._DRIVER_ERRORS) as exc:
        raise CopyFailed(table, exc, "checking") from exc


def _last_key(store: Any, table: str, key: tuple[str, ...]) -> tuple[Any, ...] | None:
    row = (
        store._reader()
        .execute(f"SELECT {', '.join(key)} FROM {table} ORDER BY {', '.join(k + ' DESC' for k in key)} LIMIT 1")
        .fetchone()
    )
    return None if row is None else tuple(row)


def _rows(
    store: Any, table: str, key: tuple[str, ...], columns: tuple[str, ...], upto: tuple[Any, ...] | None, limit: int
) -> Iterator[tuple[Any, ...]]:
    """The table's rows in key order (those with a key up to ``upto`` when given), read ``limit`` at a time."""
    order, marks = ", ".join(key), ", ".join("?" * len(key))
    # The key columns first, so each batch knows where the next one starts.
    selected = ", ".join((*key, *columns))
    after: tuple[Any, ...] | None = None
    while True:
        where: list[str] = []
        params: list[Any] = []
        if after is not None:
            where.append(f"({order}) > ({marks})")
            params.extend(after)
        if upto is not None:
            where.append(f"({order}) <= ({marks})")
            params.extend(upto)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = (
            store._reader()
            .execute(f"SELECT {selected} FROM {table}{clause} ORDER BY {order} LIMIT ?", (*params, limit))
            .fetchall()
        )
        for row in rows:
            yield tuple(row)[len(key) :]
        if len(rows) < limit:
            return
        after = tuple(rows[-1])[: len(key)]


def _plain(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row's values as both backends can compare them (a BLOB may come back as ``memoryview`` or ``bytes``)."""
    return tuple(bytes(v) if isinstance(v, (bytes, bytearray, memoryview)) else v for v in row)


def _next_batch(
    source: Any, destination: Any, table: str, key: tuple[str, ...], columns: tuple[str, ...], limit: int
) -> list[tuple[Any, ...]]:
    order = ", ".join(key)
    last = _last_key(destination, table, key)
    after = ""
    params: Sequence[Any] = ()
    if last is not None:
        after = f" WHERE ({order}) > ({', '.join('?' * len(key))})"
        params = tuple(last)
    rows = (
        source._reader()
        .execute(f"SELECT {', '.join(columns)} FROM {table}{after} ORDER BY {order} LIMIT ?", (*params, limit))
        .fetchall()
    )
    return [tuple(row) for row in rows]


def _scope_tag(scope_id: str) -> str:
    from powercontext.store.core.family_rows import scope_tag

    return scope_tag(scope_id)


def _index_heads(fulltext: Any, conn: Any, revisions: list[tuple[Any, ...]]) -> None:
    """Index each copied revision that is its Artifact's active head, as the family's writes would."""
    for artifact, revision, _kind, body, _tags, _merged_from, _created, fields, _observed in revisions:
        head = conn.execute(
            "SELECT scope_id, family FROM artifacts WHERE id = ? AND head_revision = ? AND state = 'active'",
            (artifact, revision),
        ).fetchone()
        if head is not None:
            index_head(fulltext, conn, artifact, head[0], head[1], body, fields)


def _index_chunks(fulltext: Any, conn: Any, chunks: list[tuple[Any, ...]], code_terms: CodeTerms) -> None:
    for chunk_id, file_id, _start, _end, _sha, text in chunks:
        scope_id, path = conn.execute(
            "SELECT t.scope_id, f.path FROM code_files f JOIN code_trees t ON t.id = f.tree WHERE f.id = ?", (file_id,)
        ).fetchone()
        path_terms, terms = code_terms(path, text)
        index_chunk(fulltext, conn, chunk_id, scope_id, path_terms, terms)
