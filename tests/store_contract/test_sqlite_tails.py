"""Tail rows of the SQLite packed index (store/sqlite/tails.py): small writes land in a bounded tail, and a Scope
written one memory at a time (revised, forgotten, deleted) ranks exactly like the same memories written in one
batch, straight into the per-term segments."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pysqlite3 import dbapi2 as sqlite

from powercontext.store.base import MemoryEdit, NewMemory
from powercontext.store.core.memory_rows import scope_tag
from powercontext.store.core.packed import posting_term
from powercontext.store.core.terms import MEMORY_INDEX
from powercontext.store.sqlite import SqliteStore
from powercontext.store.sqlite.packed import read_postings
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


class _WriteBetweenStatements:
    """A reader's connection that lets a write commit right after the statement reading ``fts_segments``: what
    happens when the writer thread runs between two of a search's statements. Everything else is the real
    connection's."""

    def __init__(self, conn: Any, write: Callable[[], None]) -> None:
        self._conn, self._write = conn, write

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        cursor = self._conn.execute(sql, params)
        if "FROM fts_segments" not in sql:
            return cursor
        rows = cursor.fetchall()
        self._write()
        return iter(rows)


def test_a_write_that_moves_the_tail_between_two_reads_hides_no_posting(tmp_path: Path) -> None:
    """A search reads a term's segments and its tail rows in two statements; the write that fills the tail moves
    every tail row into segments. Committed between the two, it used to hide every moved posting: a prepare during
    batch writes found nothing (tests/e2e/test_concurrency.py). Both reads now see one state."""
    store = SqliteStore(tmp_path / "race.db")
    try:
        store.create_scope(SCOPE, "tails", [])
        for i in range(MAX_TAIL_ROWS):  # every posting of "mixword" in the tail, none in segments yet
            store.create_memories(SCOPE, [NewMemory(f"mixword note {i}", "note", ())])
        assert _count(tmp_path / "race.db", "SELECT COUNT(*) FROM fts_segments") == 0
        term = posting_term(query_terms("mixword")[0])

        def fill_the_tail() -> None:
            store.create_memories(SCOPE, [NewMemory("mixword one more", "note", ())])

        racing = _WriteBetweenStatements(store._reader(), fill_the_tail)
        postings = read_postings(racing, MEMORY_INDEX, scope_tag(SCOPE), [term])
        assert _count(tmp_path / "race.db", "SELECT COUNT(*) FROM fts_tail") <= 1  # the write did move the tail
        assert postings.counts[term] == MAX_TAIL_ROWS  # the state before that write, all of it
        assert len(postings.arrays[term]) == MAX_TAIL_ROWS
        assert len(store.search_text(SCOPE, ["mixword"], 100)) == MAX_TAIL_ROWS + 1  # and the next search sees it
    finally:
        store.close()
