"""Packed full-text postings on embedded seekdb: the same BM25 scores as SQLite FTS5 after every kind of
write (batches, single creates past the compaction point, revisions, forgets, restores), and a database
written with the older one-row-per-posting layout migrates to the same answers."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from powercontext.store.base import MemoryEdit, NewMemory, Store
from powercontext.store.sqlite import SqliteStore
from powercontext.text.tokenize import query_terms, terms
from tests.seekdb_support import fresh_location, require_seekdb, seekdb_store

WORDS = [
    "deploy",
    "cache",
    "shard",
    "vault",
    "secret",
    "helm",
    "chart",
    "api",
    "key",
    "rotate",
    "mobile",
    "app",
    "billing",
    "queue",
    "worker",
    "retry",
    "timeout",
    "postgres",
    "sqlite",
    "index",
    "latency",
    "budget",
    "owner",
    "release",
    "freeze",
    "review",
    "a",
    "1",
    "x",
    "中",
    "数据",
    "数据库",
    "部署",
]
QUERIES = ["deploy cache", "a 1", "vault secret rotate", "数据库", "中", "helm chart owner", "retry timeout queue"]


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 14)))


def workload(store: Store, seed: int) -> dict[str, str]:
    """Writes a deterministic mix of every write kind; returns each live memory's artifact id -> text."""
    rng = random.Random(seed)
    store.create_scope("fts", "t", [])
    store.create_scope("other", "t", [])  # another Scope's documents count in n(t) and N, as in FTS5
    store.create_memories("other", [NewMemory(sentence(rng), "note", ()) for _ in range(30)])
    batch = store.create_memories("fts", [NewMemory(sentence(rng), "note", ()) for _ in range(120)])
    live = {r.key.artifact_id: r.text for r in batch}
    store.create_memories("fts", [NewMemory("?! …", "note", ())])  # a memory without a single term
    for _ in range(30):  # single writes: common terms pass the compaction point
        (record,) = store.create_memories("fts", [NewMemory(sentence(rng), "note", ())])
        live[record.key.artifact_id] = record.text
    ids = list(live)  # creation order: artifact ids are random, the choice below must not depend on them
    for artifact_id in rng.sample(ids, 20):
        live[artifact_id] = store.revise_memory("fts", artifact_id, 1, MemoryEdit(sentence(rng))).text
    forgotten = rng.sample(ids, 10)
    for artifact_id in forgotten:
        store.change_lifecycle("fts", artifact_id, "forget", None)
    for artifact_id in forgotten[:4]:
        store.change_lifecycle("fts", artifact_id, "restore", None)
    return live


def ranked(store: Store, query: str) -> list[tuple[str, float]]:
    return [(h.record.text, h.score) for h in store.search_text("fts", query_terms(query), 40)]


def test_scores_equal_sqlite_fts5_after_every_kind_of_write(tmp_path: Path) -> None:
    sqlite_store = SqliteStore(tmp_path / "fts.db")
    seekdb = seekdb_store(tmp_path)
    try:
        workload(sqlite_store, seed=11)
        workload(seekdb, seed=11)
        for query in QUERIES:
            want = ranked(sqlite_store, query)
            assert want, query
            got = ranked(seekdb, query)
            # Texts repeat (random sentences from a small vocabulary), so compare the ranked sequences:
            # same scores to the last bit, same texts at each score.
            assert [score for _, score in got] == [score for _, score in want], query
            assert sorted(got) == sorted(want), query
    finally:
        sqlite_store.close()
        seekdb.close()


def test_one_row_per_posting_databases_migrate_to_packed_segments(tmp_path: Path) -> None:
    require_seekdb()
    from powercontext.store.core.memory_rows import scope_tag
    from powercontext.store.oceanbase.dialect import Connection
    from powercontext.store.oceanbase.engine import connect, ensure_database
    from powercontext.store.oceanbase.migrations import MIGRATIONS, apply_migrations
    from powercontext.store.oceanbase.postings import posting_term
    from powercontext.store.oceanbase.store import OceanBaseStore

    rng = random.Random(5)
    texts = [sentence(rng) for _ in range(80)]
    # The reference: the same documents indexed by the current code.
    fresh = seekdb_store(tmp_path)
    try:
        fresh.create_scope("fts", "t", [])
        fresh.create_memories("fts", [NewMemory(t, "note", ()) for t in texts])
        reference = {q: ranked(fresh, q) for q in QUERIES}
    finally:
        fresh.close()

    legacy = fresh_location("legacy_fts")
    ensure_database(legacy)
    conn = Connection(connect(legacy, legacy.database))
    try:
        conn.query(
            "CREATE TABLE schema_migrations (version INT PRIMARY KEY, applied_at VARCHAR(32) NOT NULL)"
            " DEFAULT CHARSET utf8mb4 COLLATE utf8mb4_bin"
        )
        for version, steps in MIGRATIONS:
            if version > 6:
                break
            for step in steps:
                assert isinstance(step, str)
                conn.query(step)
            conn.query("INSERT INTO schema_migrations VALUES (%s, 'then')", (version,))
        conn.raw.commit()
        # What version 6 stored for these memories: rows of the Scope, and one fts_postings row per term.
        conn.query("INSERT INTO scopes VALUES ('fts', 't', '[]', 'then', 'then')")
        tag = scope_tag("fts")
        for doc_id, text in enumerate(texts, start=1):
            conn.query(
                "INSERT INTO artifacts (id, scope_id, family, artifact_id, head_revision, state, created_at,"
                " updated_at) VALUES (%s, 'fts', 'atomic-memory', %s, 1, 'active', 'then', 'then')",
                (doc_id, f"m{doc_id:04d}"),
            )
            conn.query(
                "INSERT INTO revisions (artifact, revision, kind, body, tags, created_at)"
                " VALUES (%s, 1, 'note', %s, '[]', 'then')",
                (doc_id, text),
            )
            words = [posting_term(t) for t in terms(text)]
            conn.query(
                "INSERT INTO fts_docs (fts_table, doc_id, scope_tag, ntokens) VALUES ('atomic_memory_fts', %s, %s, %s)",
                (doc_id, tag, 1 + len(words)),
            )
            for term in sorted(set(words)):
                conn.query(
                    "INSERT INTO fts_postings (fts_table, term, doc_id, tf1, tf2)"
                    " VALUES ('atomic_memory_fts', %s, %s, %s, 0)",
                    (term, doc_id, words.count(term)),
                )
            for term in {"", *words}:
                conn.query(
                    "INSERT INTO fts_term_docs (scope_id, term, docs) VALUES ('fts', %s, 1)"
                    " ON DUPLICATE KEY UPDATE docs = docs + 1",
                    (term,),
                )
        conn.query(
            "INSERT INTO fts_totals (fts_table, docs, tokens) SELECT fts_table, COUNT(*), SUM(ntokens) FROM fts_docs"
            " GROUP BY fts_table"
        )
        conn.raw.commit()
        apply_migrations(conn, "now")
    finally:
        conn.raw.close()

    migrated = OceanBaseStore(legacy)
    try:
        assert {q: ranked(migrated, q) for q in QUERIES} == reference
        # The migrated index keeps working: a revision takes the old words out.
        victim = next(
            h.record for h in migrated.search_text("fts", query_terms(texts[0]), 80) if h.record.text == texts[0]
        )
        migrated.revise_memory("fts", victim.key.artifact_id, 1, MemoryEdit("zzzunique"))
        assert [h.record.text for h in migrated.search_text("fts", query_terms("zzzunique"), 5)] == ["zzzunique"]
    finally:
        migrated.close()


@pytest.fixture(autouse=True)
def _seekdb() -> None:
    require_seekdb()


def test_a_term_with_more_postings_than_a_segment_holds_ranks_like_sqlite(tmp_path: Path) -> None:
    """A common term outgrows one full segment: compaction seals full segments and keeps merging the rest,
    removals rewrite sealed ones, and BM25 still equals FTS5's."""
    from powercontext.store.oceanbase.postings import MAX_SEGMENTS, SEGMENT_POSTINGS

    writes = MAX_SEGMENTS + 3
    per_write = SEGMENT_POSTINGS // MAX_SEGMENTS + 40  # the writes add up to more than one full segment
    sqlite_store = SqliteStore(tmp_path / "big.db")
    seekdb = seekdb_store(tmp_path)
    try:
        for store in (sqlite_store, seekdb):
            rng = random.Random(3)
            store.create_scope("fts", "t", [])
            ids: list[str] = []
            for _ in range(writes):
                batch = [NewMemory("alpha " + sentence(rng), "note", ()) for _ in range(per_write)]
                ids += [r.key.artifact_id for r in store.create_memories("fts", batch)]
            for artifact_id in ids[:: max(1, len(ids) // 25)]:  # spread over sealed and open segments
                store.revise_memory("fts", artifact_id, 1, MemoryEdit(sentence(rng)))
            store.create_memories("fts", [NewMemory("alpha " + sentence(rng), "note", ()) for _ in range(5)])
        assert writes * per_write > SEGMENT_POSTINGS
        for query in ("alpha", "alpha deploy", "vault"):
            want = ranked(sqlite_store, query)
            got = ranked(seekdb, query)
            assert want, query
            assert [score for _, score in got] == [score for _, score in want], query
            assert sorted(got) == sorted(want), query
    finally:
        sqlite_store.close()
        seekdb.close()
