"""Migration 16 on embedded seekdb: segments stored as records (written before it) rank the same once rewritten
in columns, as on SQLite (test_sqlite_segment_columns.py)."""

from __future__ import annotations

import random

from powercontext.store.base import NewMemory
from powercontext.store.core.packed import unpack
from powercontext.store.core.segment_codec import is_records
from powercontext.text.tokenize import query_terms
from tests.seekdb_support import fresh_location, open_seekdb, require_seekdb

_WORDS = ["deploy", "billing", "gateway", "cache", "ledger", "retry", "queue", "tenant", "export", "worker"]
_QUERIES = ["billing gateway", "retry queue tenant", "export worker", "deploy"]


def test_segments_written_as_records_are_rewritten_in_columns_and_rank_alike() -> None:
    require_seekdb()
    from powercontext.store.oceanbase.dialect import Connection
    from powercontext.store.oceanbase.engine import connect

    where = fresh_location("segment_columns")
    rng = random.Random(11)
    store = open_seekdb(where)
    store.create_scope("s", "t", [])
    for _ in range(3):
        texts = [" ".join(rng.choices(_WORDS, k=rng.randint(3, 10))) for _ in range(500)]
        store.create_memories("s", [NewMemory(text, "fact", ()) for text in texts])
    before = {q: [(h.record.key, h.score) for h in store.search_text("s", query_terms(q), 40)] for q in _QUERIES}
    store.close()

    conn = Connection(connect(where, where.database))
    try:
        rows = conn.query("SELECT fts_table, term, scope_tag, seg, postings FROM fts_segments").fetchall()
        assert rows and not any(is_records(bytes(row[4])) for row in rows if len(unpack(bytes(row[4]))) >= 32)
        # Back to a database from before migration 16: every segment as 20-byte records.
        with conn.raw.cursor() as cur:
            cur.executemany(
                "UPDATE fts_segments SET postings = %s WHERE fts_table = %s AND term = %s AND scope_tag = %s"
                " AND seg = %s",
                [(unpack(bytes(blob)).tobytes(), table, term, tag, seg) for table, term, tag, seg, blob in rows],
            )
        conn.query("DELETE FROM schema_migrations WHERE version = 16")
        conn.raw.commit()
    finally:
        conn.raw.close()

    upgraded = open_seekdb(where)
    try:
        after = {q: [(h.record.key, h.score) for h in upgraded.search_text("s", query_terms(q), 40)] for q in _QUERIES}
    finally:
        upgraded.close()
    assert after == before and all(before.values())
    conn = Connection(connect(where, where.database))
    try:
        blobs = [bytes(row[0]) for row in conn.query("SELECT postings FROM fts_segments").fetchall()]
    finally:
        conn.raw.close()
    assert len(blobs) == len(rows) and not any(is_records(blob) for blob in blobs if len(unpack(blob)) >= 32)
