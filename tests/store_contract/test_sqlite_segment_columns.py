"""Migration 16: a store whose postings segments are records (written before it) ranks the same once they are
rewritten in columns, and its segments take 8 bytes a posting instead of 20."""

from __future__ import annotations

import random
from pathlib import Path

from pysqlite3 import dbapi2 as sqlite

from powercontext.store.base import NewMemory
from powercontext.store.core.packed import unpack
from powercontext.store.core.segment_codec import is_records
from powercontext.store.sqlite import SqliteStore
from powercontext.text.tokenize import query_terms

_WORDS = [
    "deploy",
    "billing",
    "gateway",
    "cache",
    "ledger",
    "retry",
    "queue",
    "tenant",
    "export",
    "worker",
    "region",
    "shard",
]


def _segments(path: Path) -> list[bytes]:
    conn = sqlite.connect(str(path))
    try:
        return [bytes(blob) for (blob,) in conn.execute("SELECT postings FROM fts_segments")]
    finally:
        conn.close()


def test_segments_written_as_records_read_alike_and_are_rewritten_in_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    rng = random.Random(7)
    store = SqliteStore(path)
    store.create_scope("s", "t", [])
    texts = [" ".join(rng.choices(_WORDS, k=rng.randint(3, 12))) for _ in range(6000)]
    store.create_memories("s", [NewMemory(text, "fact", ()) for text in texts[:500]])  # > MAX_TAIL: segments
    for start in range(500, len(texts), 500):
        store.create_memories("s", [NewMemory(text, "fact", ()) for text in texts[start : start + 500]])
    queries = ["billing gateway", "retry queue tenant", "export worker shard region", "deploy"]
    before = {q: [(h.record.key, h.score) for h in store.search_text("s", query_terms(q), 40)] for q in queries}
    store.close()
    written = _segments(path)
    assert written and not any(is_records(blob) for blob in written if len(unpack(blob)) >= 32)

    # Back to a file from before migration 16: every segment as 20-byte records.
    conn = sqlite.connect(str(path))
    rows = conn.execute("SELECT id, postings FROM fts_segments").fetchall()
    conn.executemany("UPDATE fts_segments SET postings = ? WHERE id = ?", [(unpack(b).tobytes(), i) for i, b in rows])
    conn.execute("DELETE FROM schema_migrations WHERE version = 16")
    conn.commit()
    conn.close()
    old = _segments(path)
    assert all(is_records(blob) for blob in old)

    upgraded = SqliteStore(path)
    after = {q: [(h.record.key, h.score) for h in upgraded.search_text("s", query_terms(q), 40)] for q in queries}
    upgraded.close()
    assert after == before
    assert all(before.values())
    new = _segments(path)
    assert not any(is_records(blob) for blob in new if len(unpack(blob)) >= 32)
    postings = sum(len(unpack(blob)) for blob in new)
    assert sum(map(len, new)) <= 8 * postings + 24 * len(new) < sum(map(len, old)) / 2
