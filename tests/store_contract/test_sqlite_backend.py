"""SQLite-specific guarantees: migrations, WAL, foreign keys, and Scope-qualified identity in one file."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from pysqlite3 import dbapi2 as sqlite

from powercontext.contract.prepare import PrepareContextRequest
from powercontext.runtime import Runtime
from powercontext.store.base import MemoryEdit, MemoryMerge, NewMemory
from powercontext.store.sqlite import SqliteStore
from powercontext.store.sqlite.migrations import MIGRATIONS
from tests.support import parse_fragments, strict_json


def _rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite.connect(str(path))
    try:
        return list(conn.execute(sql).fetchall())
    finally:
        conn.close()


def test_migrations_apply_once_and_reopen_works(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    first = SqliteStore(path)
    first.create_scope("s", "t", [])
    first.close()
    applied = _rows(path, "SELECT version, applied_at FROM schema_migrations ORDER BY version")
    versions = [int(str(v)) for v, _ in applied]
    # Version 1 is applied, then every migration exactly once, in order (numbers are reserved per
    # feature branch, so a branch may skip some until they merge).
    assert versions[0] == 1
    assert versions == sorted(set(versions))
    assert versions == [v for v, _ in MIGRATIONS]
    for _ in range(2):
        again = SqliteStore(path)
        assert again.ready()
        assert again.get_scope("s").title == "t"
        again.close()
    assert _rows(path, "SELECT version, applied_at FROM schema_migrations ORDER BY version") == applied
    tables = {name for (name,) in _rows(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"scopes", "artifacts", "revisions", "idempotency_keys", "fts_term_docs"} <= tables
    assert {"code_trees", "code_files", "code_chunks"} <= tables
    # Full-text tables are per Scope (migration 9): none is shared by every Scope any more.
    assert not {"atomic_memory_fts", "topic_memory_fts", "experience_fts", "code_fts"} & tables


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    SqliteStore(path).close()
    conn = sqlite.connect(str(path))
    conn.execute("INSERT INTO schema_migrations (version, applied_at) VALUES (99, 'later')")
    conn.commit()
    conn.close()
    with pytest.raises(RuntimeError, match="newer"):
        SqliteStore(path)


def test_wal_mode_is_on(tmp_path: Path) -> None:
    path = tmp_path / "wal.db"
    store = SqliteStore(path)
    try:
        assert _rows(path, "PRAGMA journal_mode") == [("wal",)]
    finally:
        store.close()


def test_foreign_keys_are_on_for_writer_and_readers(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "fk.db")
    try:
        # White-box: the pragma is per connection, so check the store's own connections.
        assert store._writer.execute("PRAGMA foreign_keys").fetchone() == (1,)
        assert store._reader().execute("PRAGMA foreign_keys").fetchone() == (1,)
        with pytest.raises(sqlite.IntegrityError):
            store._writer.execute(
                "INSERT INTO artifacts (scope_id, family, artifact_id, head_revision, state, created_at, updated_at)"
                " VALUES ('no-such-scope', 'atomic-memory', 'am_x', 1, 'active', 'now', 'now')"
            )
    finally:
        store.close()


def test_readers_do_not_write(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "ro.db")
    try:
        with pytest.raises(sqlite.OperationalError):
            store._reader().execute("CREATE TABLE nope (x)")
    finally:
        store.close()


def test_identical_artifact_ids_in_two_scopes_stay_two_identities(tmp_path: Path) -> None:
    """Ids cannot be chosen over HTTP, so the file is edited to give two Scopes the same artifact id."""
    path = tmp_path / "ids.db"
    store = SqliteStore(path)
    a, b = "scope-a", "scope-b"
    store.create_scope(b, "B", [])
    store.create_scope(a, "A", [b])
    (ka,) = store.create_memories(a, [NewMemory("sharedword from scope a", "fact", ())])
    (kb,) = store.create_memories(b, [NewMemory("sharedword from scope b", "fact", ())])
    conn = sqlite.connect(str(path))
    conn.execute(
        "UPDATE artifacts SET artifact_id = ? WHERE scope_id = ? AND artifact_id = ?",
        (ka.key.artifact_id, b, kb.key.artifact_id),
    )
    conn.commit()
    conn.close()
    same = ka.key.artifact_id

    ra, rb = store.read_head(a, same), store.read_head(b, same)
    assert (ra.text, rb.text) == ("sharedword from scope a", "sharedword from scope b")
    assert ra.key != rb.key and ra.key.artifact_id == rb.key.artifact_id
    assert {ra.key.scope_id, rb.key.scope_id} == {a, b}

    runtime = Runtime(store)
    try:
        request_id = str(uuid.uuid4())
        result = runtime.prepare(
            PrepareContextRequest(scope_id=a, query="sharedword", include_receipt=True), request_id
        )
        body = strict_json(result.response_body())
        receipt = body["receipt"]
        selected = [s["artifact_address"] for s in receipt["selected"]]
        assert [(s["scope_id"], s["artifact"]["artifact_id"]) for s in selected] == [(a, same), (b, same)]
        assert not any(g["reason"] == "duplicate" for g in receipt["omitted"])
        fragments = parse_fragments(body["content"])
        assert [f.address for f in fragments] == selected
        assert [f.item["content"] for f in fragments] == ["sharedword from scope a", "sharedword from scope b"]
        assert json.dumps(receipt).count(same) == 2
    finally:
        runtime.close()


def test_upgrade_from_schema_version_1_keeps_memories_searchable(tmp_path: Path) -> None:
    """A file written at schema version 1 (rows inserted as version 1 wrote them) opens and searches."""
    from powercontext.store.core.memory_rows import scope_tag
    from powercontext.text.tokenize import query_terms, terms

    path = tmp_path / "v1.db"
    conn = sqlite.connect(str(path), isolation_level=None)
    conn.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
    conn.executescript(MIGRATIONS[0][1])
    conn.execute("INSERT INTO schema_migrations VALUES (1, 'then')")
    conn.execute("INSERT INTO scopes VALUES ('old', 'Old', '[]', 'then', 'then')")
    rows = [
        (1, "am_one", "active", "upgradeword first memory"),
        (2, "am_two", "active", "upgradeword second memory"),
        (3, "am_gone", "forgotten", "upgradeword forgotten memory"),
    ]
    for rowid, aid, state, body in rows:
        conn.execute(
            "INSERT INTO artifacts VALUES (?, 'old', 'atomic-memory', ?, 1, ?, NULL, 'then', 'then')",
            (rowid, aid, state),
        )
        conn.execute("INSERT INTO revisions VALUES (?, 1, 'fact', ?, '[]', '[]', 'then')", (rowid, body))
        if state == "active":
            conn.execute(
                "INSERT INTO atomic_memory_fts (rowid, scope_tag, terms) VALUES (?, ?, ?)",
                (rowid, scope_tag("old"), " ".join(terms(body))),
            )
    conn.close()

    store = SqliteStore(path)
    try:
        versions = [v for (v,) in _rows(path, "SELECT version FROM schema_migrations ORDER BY version")]
        assert versions == [v for v, _ in MIGRATIONS]
        found = {h.record.key.artifact_id for h in store.search_text("old", query_terms("upgradeword"), 10)}
        assert found == {"am_one", "am_two"}
        (new,) = store.create_memories("old", [NewMemory("upgradeword third memory", "fact", ())])
        found = {h.record.key.artifact_id for h in store.search_text("old", query_terms("upgradeword"), 10)}
        assert found == {"am_one", "am_two", new.key.artifact_id}
        assert store.read_revision("old", "am_gone", 1).state == "forgotten"
    finally:
        store.close()


def test_term_counts_stay_exact_through_every_kind_of_write(tmp_path: Path) -> None:
    """The per-Scope term counts that steer query pruning equal a recount from the active heads."""
    import random
    from collections import Counter

    from powercontext.text.tokenize import terms

    path = tmp_path / "counts.db"
    store = SqliteStore(path)
    rng = random.Random(5)
    words = ["ledger", "deploy", "deployment", "cache", "数据库", "迁移", "retry", "queue", "shard", "tokens"]
    scopes = ["a", "b"]
    for scope in scopes:
        store.create_scope(scope, scope, [])
    live: dict[str, list[tuple[str, int]]] = {s: [] for s in scopes}  # active (artifact_id, head revision)

    def body() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))

    for _ in range(400):
        scope = rng.choice(scopes)
        pool = live[scope]
        op = rng.choice(["batch", "revise", "forget", "merge"] if len(pool) >= 2 else ["batch"])
        if op == "batch":
            created = store.create_memories(scope, [NewMemory(body(), "fact", ()) for _ in range(rng.randint(1, 4))])
            pool.extend((r.key.artifact_id, 1) for r in created)
        elif op == "revise":
            i = rng.randrange(len(pool))
            record = store.revise_memory(scope, pool[i][0], pool[i][1], MemoryEdit(body()))
            pool[i] = (pool[i][0], record.key.revision)
        elif op == "forget":
            artifact_id, _ = pool.pop(rng.randrange(len(pool)))
            store.change_lifecycle(scope, artifact_id, "forget", None)
            if rng.random() < 0.5:
                restored = store.change_lifecycle(scope, artifact_id, "restore", None)
                pool.append((artifact_id, restored.key.revision))
        else:
            first, second = pool.pop(), pool.pop()
            merged = store.merge_memories(scope, MemoryMerge((first, second), body(), "fact", ()))
            pool.append((merged.key.artifact_id, 1))
    store.close()

    expected: Counter[tuple[str, str]] = Counter()
    heads = _rows(
        path,
        "SELECT a.scope_id, r.body FROM artifacts a JOIN revisions r ON r.artifact = a.id"
        " AND r.revision = a.head_revision WHERE a.state = 'active'",
    )
    for scope_id, text in heads:
        expected.update((str(scope_id), t) for t in {"", *terms(str(text))})
    stored = {(str(s), str(t)): n for s, t, n in _rows(path, "SELECT scope_id, term, docs FROM fts_term_docs")}
    assert stored == dict(expected)
    assert sum(len(p) for p in live.values()) == len(heads)


def test_the_driver_can_load_extensions_for_sqlite_vec() -> None:
    """The vector issue loads sqlite-vec; the stdlib module here cannot, so the bundled driver must."""
    from powercontext.store.core.driver import sqlite as driver

    conn = driver.connect(":memory:")
    try:
        conn.enable_load_extension(True)
        conn.enable_load_extension(False)
        version = conn.execute("SELECT sqlite_version()").fetchone()[0]
    finally:
        conn.close()
    assert tuple(int(p) for p in version.split(".")[:2]) >= (3, 45)


def test_a_second_process_writing_meets_no_locked_database(tmp_path: Path) -> None:
    """Two stores on one file (as two processes would be) both write while the other holds transactions."""
    import threading

    path = tmp_path / "two.db"
    first, second = SqliteStore(path), SqliteStore(path)
    first.create_scope("s", "t", [])
    errors: list[BaseException] = []

    def write(store: SqliteStore) -> None:
        try:
            for _ in range(50):
                store.create_memories("s", [NewMemory("parallel writer body", "fact", ()) for _ in range(20)])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(s,)) for s in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    first.close()
    second.close()
    assert errors == []
    assert _rows(path, "SELECT COUNT(*) FROM artifacts") == [(2000,)]
