"""The data steps of SQLite migrations: Python that runs after a migration's SQL, in the same transaction."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any


def backfill_term_docs(conn: Any) -> None:
    """Migration 2: each Scope's count of active heads per term."""
    from powercontext.text.tokenize import terms

    counts: Counter[tuple[str, str]] = Counter()
    rows = conn.execute(
        "SELECT a.scope_id, r.body FROM artifacts a"
        " JOIN revisions r ON r.artifact = a.id AND r.revision = a.head_revision WHERE a.state = 'active'"
    )
    for scope_id, body in rows:
        # "" counts the Scope's active heads (see store.ACTIVE_DOCS).
        counts.update((scope_id, term) for term in {"", *terms(body)})
    conn.executemany(
        "INSERT INTO fts_term_docs (scope_id, term, docs) VALUES (?, ?, ?)", [(s, t, n) for (s, t), n in counts.items()]
    )


def index_packed(conn: Any) -> None:
    """Migration 11: every Scope's packed postings, from its active heads."""
    from powercontext.store.sqlite.reindex import pack_every_scope

    pack_every_scope(conn)


def vectors_with_rowids(conn: Any) -> None:
    """Migration 15: the vectors into the table with rowids, and its indexes (see the migration's comment)."""
    (secure,) = conn.execute("PRAGMA secure_delete").fetchone()
    conn.execute("PRAGMA secure_delete = OFF")
    try:
        for statement in (
            "INSERT INTO artifact_embeddings_v15 (artifact, revision, model_id, vector)"
            " SELECT artifact, revision, model_id, vector FROM artifact_embeddings ORDER BY artifact, revision",
            "DROP TABLE artifact_embeddings",
            "ALTER TABLE artifact_embeddings_v15 RENAME TO artifact_embeddings",
            "CREATE INDEX artifact_embedding_models ON artifact_embeddings(artifact, revision, model_id)",
            "CREATE INDEX artifacts_by_scope_rowid ON artifacts(scope_id, family, id)",
        ):
            conn.execute(statement)
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(secure)}")


def segments_in_columns(conn: Any) -> None:
    """Migration 16: every postings segment stored as records rewritten in columns (core/segment_codec.py)."""
    from powercontext.store.core.packed import unpack
    from powercontext.store.core.segment_codec import encode, is_records

    (secure,) = conn.execute("PRAGMA secure_delete").fetchone()
    conn.execute("PRAGMA secure_delete = OFF")  # postings hold ids and counts, never text: nothing to erase
    try:
        last = 0
        while rows := conn.execute(
            "SELECT id, postings FROM fts_segments WHERE id > ? ORDER BY id LIMIT 2000", (last,)
        ).fetchall():
            last = int(rows[-1][0])
            conn.executemany(
                "UPDATE fts_segments SET postings = ? WHERE id = ?",
                [(encode(unpack(blob)), seg_id) for seg_id, blob in rows if is_records(blob)],
            )
    finally:
        conn.execute(f"PRAGMA secure_delete = {int(secure)}")


# Data steps that run after a migration's SQL, in the same transaction. (Migration 9's, which filled per-Scope
# FTS5 tables, is gone: migration 11 replaces those tables and indexes everything again.)
DATA_STEPS: dict[int, Callable[[Any], None]] = {
    2: backfill_term_docs,
    11: index_packed,
    15: vectors_with_rowids,
    16: segments_in_columns,
}
