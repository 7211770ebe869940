"""BM25 with Lucene's positive IDF, identical on SQLite and embedded seekdb: a term found in every memory of a
Scope (a person's name in a chat log) still counts, and the scores are the formula's, to the last bit."""

from __future__ import annotations

import math
from pathlib import Path

from powercontext.store.base import NewMemory, Store
from powercontext.store.sqlite import SqliteStore
from powercontext.text.tokenize import query_terms
from tests.seekdb_support import seekdb_store

TEXTS = [
    "alice said the budget review moves to friday",
    "alice booked the room",
    "alice alice alice",
    "alice asked about lunch plans",
]


def _load(store: Store) -> None:
    store.create_scope("chat", "t", [])
    store.create_memories("chat", [NewMemory(text, "note", ()) for text in TEXTS])


def _ranked(store: Store, query: str) -> list[tuple[str, float]]:
    return [(h.record.text, h.score) for h in store.search_text("chat", query_terms(query), 10)]


def test_a_term_in_every_memory_still_ranks_and_both_stores_agree(tmp_path: Path) -> None:
    sqlite_store = SqliteStore(tmp_path / "fts.db")
    seekdb = seekdb_store(tmp_path)
    try:
        _load(sqlite_store)
        _load(seekdb)
        for query in ("alice", "alice budget", "alice room lunch"):
            assert _ranked(sqlite_store, query) == _ranked(seekdb, query), query
        alice = _ranked(sqlite_store, "alice")
        # N = 4, n = 4: Lucene's idf is ln(1 + 0.5 / 4.5); FTS5's form clamped it to 1e-6.
        idf = math.log(1 + 0.5 / 4.5)
        avgdl = sum(1 + len(t.split()) for t in TEXTS) / len(TEXTS)  # the scope tag is one token of each
        tf, size = 3, 4
        expected = idf * (tf * 2.2) / (tf + 1.2 * (0.25 + 0.75 * size / avgdl))
        assert alice[0] == ("alice alice alice", expected)
        assert all(score > 0.05 for _, score in alice)
        # The memory holding both terms ranks first: the common term adds to the rare one's evidence.
        assert _ranked(seekdb, "alice budget")[0][0] == TEXTS[0]
    finally:
        sqlite_store.close()
        seekdb.close()
