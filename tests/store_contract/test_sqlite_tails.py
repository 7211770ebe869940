"""Tail rows of the SQLite packed index (store/sqlite/tails.py): small writes land in a bounded tail, and a Scope
written one memory at a time (revised, forgotten, deleted) ranks exactly like the same memories written in one
batch, straight into the per-term segments."""

from __future__ import annotations

import random
from pathlib import Path

from pysqlite3 import dbapi2 as sqlite

from powercontext.store.base import MemoryEdit, NewMemory
from powercontext.store.core.memory_rows import scope_tag
from powercontext.store.sqlite import SqliteStore
from powercontext.store.sqlite.tails import MAX_TAIL_ROWS
from powercontext.text.tokenize import query_terms

SCOPE = "team:tails"
VOCABULARY = [f"w{i}" for i in range(120)]
QUERIES = ["w0 w1", "w3 w40 w41", "w2", "w1 w5 w9 w13", "w100 w0", "w7"]


def _text(rng: random.Random) -> str:
    return " ".join(VOCABULARY[min(int(rng.paretovariate(0.9)) - 1, 119)] for _ in range(rng.randint(3, 16)))


def _count(path: Path, sql: str) -> int:
    conn = sqlite.connect(str(path))
    try:
        return int(conn.execute(sql).fetchone()[0])
    finally:
        conn.close()


def _ranking(store: SqliteStore, query: str) -> list[tuple[str, float]]:
    return [(h.record.text, h.score) for h in store.search_text(SCOPE, query_terms(query), 40)]


def _edit(store: SqliteStore, ids: list[str], edits: dict[int, str], forgotten: set[int]) -> None:
    for i, text in edits.items():
        store.revise_memory(SCOPE, ids[i], 1, MemoryEdit(text))
    for i in sorted(forgotten):
        store.change_lifecycle(SCOPE, ids[i], "forget", None)


def test_single_writes_rank_like_one_batch_and_the_tail_stays_bounded(tmp_path: Path) -> None:
    rng = random.Random(14)
    texts = [_text(rng) for _ in range(600)]
    edits = {i: _text(rng) for i in rng.sample(range(600), 25)}
    forgotten = set(rng.sample(sorted(set(range(600)) - set(edits)), 15))
    singles = SqliteStore(tmp_path / "singles.db")
    batch = SqliteStore(tmp_path / "batch.db")
    try:
        singles.create_scope(SCOPE, "tails", [])
        ids = [singles.create_memories(SCOPE, [NewMemory(t, "note", ())])[0].key.artifact_id for t in texts]
        tail_rows = _count(tmp_path / "singles.db", "SELECT COUNT(*) FROM fts_tail")
        assert 0 < tail_rows <= MAX_TAIL_ROWS  # 600 writes: most moved into segments, the newest still in the tail
        # Revisions and forgets reach postings in the tail and in segments alike.
        _edit(singles, ids, edits, forgotten)
        assert _count(tmp_path / "singles.db", "SELECT COUNT(*) FROM fts_tail") <= MAX_TAIL_ROWS

        # The same history, the memories written in one batch (straight into segments, no tail row).
        batch.create_scope(SCOPE, "tails", [])
        batch_ids = [r.key.artifact_id for r in batch.create_memories(SCOPE, [NewMemory(t, "note", ()) for t in texts])]
        assert _count(tmp_path / "batch.db", "SELECT COUNT(*) FROM fts_tail") == 0
        _edit(batch, batch_ids, edits, forgotten)
        for query in QUERIES:
            found = _ranking(singles, query)
            assert len(found) > 5, query
            assert found == _ranking(batch, query), query  # same memories, scores to the last bit, order
    finally:
        singles.close()
        batch.close()


def test_deleting_a_scope_drops_its_tail_rows(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "d.db")
    try:
        store.create_scope(SCOPE, "tails", [])
        store.create_scope("team:other", "other", [])
        for text in ("alpha beta", "beta gamma", "gamma delta"):
            store.create_memories(SCOPE, [NewMemory(text, "note", ())])
            store.create_memories("team:other", [NewMemory(text, "note", ())])
        store.delete_scope(SCOPE)
        assert [h.record.text for h in store.search_text("team:other", ["beta"], 10)] == ["alpha beta", "beta gamma"]
    finally:
        store.close()
    assert _count(tmp_path / "d.db", "SELECT COUNT(*) FROM fts_tail") == 3  # the other Scope's three writes
    gone = scope_tag(SCOPE)
    assert _count(tmp_path / "d.db", f"SELECT COUNT(*) FROM fts_tail WHERE scope_tag = '{gone}'") == 0
