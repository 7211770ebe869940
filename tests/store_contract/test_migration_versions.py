"""Both backends share one migration numbering: same latest version, no gaps, every version recorded.

A version that one backend does not need is an explicit no-op there (SQLite's 7 reserves OceanBase's
packed full-text postings), so a new migration is ``LATEST_VERSION + 1`` on both and never collides.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import pytest

from powercontext.store.base import NewMemory, Store
from powercontext.store.core.driver import sqlite
from powercontext.store.oceanbase import migrations as oceanbase_migrations
from powercontext.store.sqlite import SqliteStore
from powercontext.store.sqlite import migrations as sqlite_migrations

BACKENDS = {"sqlite": sqlite_migrations, "oceanbase": oceanbase_migrations}


def test_both_backends_are_at_the_same_latest_version() -> None:
    assert sqlite_migrations.LATEST_VERSION == oceanbase_migrations.LATEST_VERSION


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_each_backend_numbers_its_migrations_one_to_latest_without_gaps(backend: str) -> None:
    module = BACKENDS[backend]
    versions = [version for version, _ in module.MIGRATIONS]
    assert versions == list(range(1, module.LATEST_VERSION + 1))


def test_an_opened_store_records_every_version(open_store: Callable[[], Store]) -> None:
    store = open_store()
    rows = store._reader().execute("SELECT version FROM schema_migrations ORDER BY version").fetchall()  # type: ignore[attr-defined]
    assert [int(row[0]) for row in rows] == list(range(1, sqlite_migrations.LATEST_VERSION + 1))


def test_a_sqlite_database_at_version_6_upgrades_through_the_no_op_step(tmp_path: Path) -> None:
    path = tmp_path / "v6.db"
    SqliteStore(path).close()
    with contextlib.closing(sqlite.connect(path)) as conn:  # as a database written before version 7 existed
        conn.execute("DELETE FROM schema_migrations WHERE version = 7")
        conn.commit()
    store = SqliteStore(path)
    try:
        versions = [row[0] for row in store._reader().execute("SELECT version FROM schema_migrations")]
        assert sorted(versions) == [v for v, _ in sqlite_migrations.MIGRATIONS]  # 7 applied again, once
        assert store.create_scope("v7", "t", []).scope_id == "v7"  # and the store works
    finally:
        store.close()


def test_memories_written_before_observed_at_existed_read_as_observed_when_recorded(tmp_path: Path) -> None:
    path = tmp_path / "v7.db"
    store = SqliteStore(path)
    store.create_scope("s", "t", [])
    store.close()
    with contextlib.closing(sqlite.connect(path)) as conn:  # a version-7 database with a memory in it
        conn.execute("ALTER TABLE revisions DROP COLUMN observed_at")
        conn.execute("DELETE FROM schema_migrations WHERE version = 8")
        then = "2024-01-02T03:04:05.000Z"
        conn.execute(
            "INSERT INTO artifacts (scope_id, family, artifact_id, head_revision, state, created_at, updated_at)"
            " VALUES ('s', 'atomic-memory', 'am_old', 1, 'active', ?, ?)",
            (then, then),
        )
        conn.execute(
            "INSERT INTO revisions (artifact, revision, kind, body, tags, created_at)"
            " VALUES (last_insert_rowid(), 1, 'fact', 'An old fact.', '[]', ?)",
            (then,),
        )
        conn.commit()
    store = SqliteStore(path)
    try:
        record = store.read_head("s", "am_old")
        assert record.text == "An old fact."
        assert record.observed == "2024-01-02T03:04:05.000Z"
    finally:
        store.close()


def test_a_version_14_store_keeps_its_vectors_when_they_move_to_a_table_with_rowids(tmp_path: Path) -> None:
    import numpy as np

    path = tmp_path / "v14.db"
    store = SqliteStore(path)
    store.create_scope("s", "t", [])
    store.create_memories("s", [NewMemory(f"note {i}", "fact", ()) for i in range(20)])
    vectors = np.eye(20, 8, dtype=np.float32) + 0.01
    assert store.write_embeddings("m", list(zip(store.embedding_backlog("m", 0, 100), vectors, strict=True))) == 20
    store.close()
    with contextlib.closing(sqlite.connect(path)) as conn:  # back to version 14's WITHOUT ROWID table
        conn.executescript(
            """
            DROP INDEX artifacts_by_scope_rowid;
            CREATE TABLE old (artifact INTEGER NOT NULL, revision INTEGER NOT NULL, model_id TEXT NOT NULL,
              vector BLOB NOT NULL, PRIMARY KEY (artifact, revision),
              FOREIGN KEY (artifact, revision) REFERENCES revisions(artifact, revision)) WITHOUT ROWID;
            INSERT INTO old SELECT artifact, revision, model_id, vector FROM artifact_embeddings;
            DROP TABLE artifact_embeddings;
            ALTER TABLE old RENAME TO artifact_embeddings;
            DELETE FROM schema_migrations WHERE version = 15;
            """
        )
        with pytest.raises(sqlite.OperationalError):
            conn.execute("SELECT rowid FROM artifact_embeddings")
    store = SqliteStore(path)
    try:
        assert store.embedding_status("m").current_model == 20
        assert store.embedding_backlog("m", 0, 100) == []
        hits = store.search_vector("s", "m", vectors[7], 1)
        assert [h.record.text for h in hits] == ["note 7"]
        assert len(store._reader().execute("SELECT rowid FROM artifact_embeddings").fetchall()) == 20  # type: ignore[attr-defined]
        assert store._writer.execute("PRAGMA secure_delete").fetchone() == (1,)  # purges still zero what they free
    finally:
        store.close()
