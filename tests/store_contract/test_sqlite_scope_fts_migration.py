"""Migration 9 on SQLite: a database whose full-text tables were shared by every Scope is indexed again, per
Scope, on first open, and finds and ranks what a database made per Scope from the start does."""

from __future__ import annotations

import contextlib
from pathlib import Path

from powercontext.code.identifiers import identifier_terms, path_terms
from powercontext.store.base import ExperienceContent, ExperienceDraft, NewMemory, NewTopic
from powercontext.store.code import NewCodeChunk, NewCodeFile
from powercontext.store.core.driver import sqlite
from powercontext.store.sqlite import SqliteStore
from powercontext.store.sqlite.migrations import MIGRATIONS
from powercontext.text.tokenize import query_terms
from tests.support import sha256_of

QUERIES = ("ledger deploy", "sqlite wal", "retry")


def _fill(store: SqliteStore) -> None:
    """Two Scopes with every family searched by full text (no removals: a rebuilt index counts no removed
    document, where FTS5 keeps counting it, so scores after a removal would legitimately differ)."""
    for scope in ("a", "b"):
        store.create_scope(scope, scope, [])
        store.create_memories(
            scope,
            [
                NewMemory(f"{scope} ledger deploy runs nightly", "fact", ()),
                NewMemory("sqlite wal mode is on", "fact", ()),
                NewMemory(f"retry the {scope} queue with backoff, then deploy", "fact", ()),
            ],
        )
        store.create_topic(scope, NewTopic("Ledger deploy", "sqlite wal and retry notes", ()))
        candidate = store.propose_experience(
            scope, ExperienceDraft(ExperienceContent("ledger deploy failed", "retry later", "sqlite locks"), ())
        )
        store.approve_candidate(scope, candidate.candidate_id, None)
        store.register_code_tree(scope, "dir:x", "dir", "/srv/x", 1000)
        text = "def retry_ledger_deploy():\n    pass\n"
        # Terms as the code indexer cuts them (the migration re-cuts them from the stored text).
        chunk = NewCodeChunk(1, 2, sha256_of(text), text, " ".join(identifier_terms(text)))
        code = NewCodeFile(
            "ops/deploy.py", sha256_of(text), "python", 36, 2, " ".join(path_terms("ops/deploy.py")), (chunk,)
        )
        store.put_code_files(scope, "dir:x", [code])
        store.finish_code_index(scope, "dir:x", [])


def _seen(store: SqliteStore) -> dict[str, object]:
    seen: dict[str, object] = {}
    for scope in ("a", "b"):
        for query in QUERIES:
            terms = query_terms(query)
            seen[f"{scope} memory {query}"] = [(h.record.key, h.score) for h in store.search_text(scope, terms, 20)]
            seen[f"{scope} topic {query}"] = [(h.record.key, h.score) for h in store.search_topics(scope, terms, 20)]
            seen[f"{scope} experience {query}"] = [
                (h.record.key, h.score) for h in store.search_experiences(scope, terms, 20)
            ]
            seen[f"{scope} code {query}"] = [(h.chunk.path, h.score) for h in store.search_code(scope, terms, 20)]
    return seen


def test_a_database_with_shared_full_text_tables_is_indexed_again_per_scope(tmp_path: Path) -> None:
    path = tmp_path / "pre9.db"
    store = SqliteStore(path)
    _fill(store)
    expected = _seen(store)
    store.close()
    # Make it the database version 8 left: the shared tables (as migrations 1, 4 and 5 made them, holding rows
    # of every Scope), no per-Scope table, version 9 not applied.
    with contextlib.closing(sqlite.connect(path)) as conn:
        names = [
            n
            for (n,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE "
                "'CREATE VIRTUAL TABLE%' AND name LIKE '%fts%'"
            )
        ]
        for name in sorted(names, key=lambda n: not n.endswith("_vocab")):
            conn.execute(f"DROP TABLE {name}")
        for version in (1, 4, 5):
            script = dict(MIGRATIONS)[version]
            for statement in script.split(";"):
                if "CREATE VIRTUAL TABLE" in statement:
                    conn.execute(statement[statement.index("CREATE VIRTUAL TABLE") :])
        conn.execute("INSERT INTO atomic_memory_fts (rowid, scope_tag, terms) VALUES (999, 'sstale', 'stale')")
        conn.execute("DELETE FROM schema_migrations WHERE version = 9")
        conn.commit()

    reopened = SqliteStore(path)
    try:
        assert _seen(reopened) == expected
        tables = {n for (n,) in reopened._reader().execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert not {"atomic_memory_fts", "topic_memory_fts", "experience_fts", "code_fts"} & tables
        # And the per-Scope tables keep taking writes.
        (new,) = reopened.create_memories("b", [NewMemory("zzzfresh ledger", "fact", ())])
        assert [h.record.key for h in reopened.search_text("b", query_terms("zzzfresh"), 5)] == [new.key]
    finally:
        reopened.close()
