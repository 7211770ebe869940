"""SQLite-specific guarantees of migration 4: its schema, an upgrade of an existing file, and family isolation."""

from __future__ import annotations

import json
from pathlib import Path

from pysqlite3 import dbapi2 as sqlite

from powercontext.store.base import ExperienceContent, ExperienceDraft, NewMemory, NewTopic, ProfileEntry
from powercontext.store.sqlite import SqliteStore
from powercontext.text.tokenize import query_terms


def _rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite.connect(str(path))
    try:
        return list(conn.execute(sql).fetchall())
    finally:
        conn.close()


def test_migration_4_schema(tmp_path: Path) -> None:
    path = tmp_path / "m4.db"
    SqliteStore(path).close()
    tables = {name for (name,) in _rows(path, "SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "artifact_candidates" in tables
    columns = {row[1] for row in _rows(path, "PRAGMA table_info(revisions)")}
    assert "fields" in columns
    assert 4 in {v for (v,) in _rows(path, "SELECT version FROM schema_migrations")}


def test_upgrading_a_file_without_migration_4_keeps_atomic_memory(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    store = SqliteStore(path)
    store.create_scope("s", "t", [])
    (memory,) = store.create_memories("s", [NewMemory("upgradeword memory", "fact", ())])
    store.close()
    # Turn the file back into a pre-4 one.
    conn = sqlite.connect(str(path))
    for statement in (
        "DROP TABLE artifact_candidates",
        "DROP TABLE IF EXISTS topic_memory_fts",  # gone since migration 9 (per-Scope tables)
        "DROP TABLE IF EXISTS experience_fts",
        "ALTER TABLE revisions DROP COLUMN fields",
        "DELETE FROM schema_migrations WHERE version = 4",
    ):
        conn.execute(statement)
    conn.commit()
    conn.close()

    upgraded = SqliteStore(path)
    assert upgraded.read_head("s", memory.key.artifact_id).text == "upgradeword memory"
    assert [h.record.key for h in upgraded.search_text("s", query_terms("upgradeword"), 5)] == [memory.key]
    topic = upgraded.create_topic("s", NewTopic("After the upgrade", "upgradeword topic", ()))
    assert [h.record.key for h in upgraded.search_topics("s", query_terms("upgradeword"), 5)] == [topic.key]
    upgraded.close()


def test_family_rows_live_in_the_shared_tables_with_structured_fields(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    store = SqliteStore(path)
    store.create_scope("s", "t", [])
    store.create_memories("s", [NewMemory("plain memory", "note", ())])
    topic = store.create_topic("s", NewTopic("Title", "Body", ("tag",)))
    candidate = store.propose_experience("s", ExperienceDraft(ExperienceContent("sit", "worked", "avoid"), ()))
    store.approve_candidate("s", candidate.candidate_id, None)
    store.commit_profile("s", 0, [ProfileEntry("k", "v")])
    store.close()
    rows = _rows(
        path,
        "SELECT a.family, a.artifact_id, r.revision, r.kind, r.body, r.fields FROM artifacts a"
        " JOIN revisions r ON r.artifact = a.id ORDER BY a.id",
    )
    by_family = {row[0]: row for row in rows}
    assert set(by_family) == {"atomic-memory", "topic-memory", "experience", "profile"}
    assert by_family["atomic-memory"][5] is None  # Atomic Memory rows are untouched by migration 4
    assert by_family["topic-memory"][1] == topic.key.artifact_id
    assert by_family["topic-memory"][4] == "Title\n\nBody"  # body is the rendered text
    assert json.loads(str(by_family["topic-memory"][5])) == {"title": "Title", "body": "Body"}
    assert by_family["experience"][4] == "Situation: sit\nWhat worked: worked\nWhat to avoid: avoid"
    assert by_family["profile"][1:5] == ("profile", 1, "", "k: v")
    # The Atomic Memory term statistics count Atomic Memory only.
    assert _rows(path, "SELECT docs FROM fts_term_docs WHERE scope_id = 's' AND term = ''") == [(1,)]
