"""``store copy``: SQLite → embedded seekdb, everything arrives, an interrupted copy resumes without duplicates."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from powercontext.code.identifiers import identifier_terms, path_terms
from powercontext.store.base import (
    Embedding,
    ExperienceContent,
    ExperienceDraft,
    MemoryEdit,
    MemoryMerge,
    NewMemory,
    NewTopic,
    ProfileEntry,
)
from powercontext.store.code import NewCodeChunk, NewCodeFile
from powercontext.store.copy import DestinationNotFromSource, copy_store, count_rows
from powercontext.store.errors import StoreNotFound
from powercontext.store.oceanbase.engine import connect
from powercontext.store.open import open_store
from powercontext.store.sqlite import SqliteStore
from powercontext.text.tokenize import query_terms
from tests import forked
from tests.seekdb_support import location, require_seekdb, seekdb_store
from tests.support import sha256_of


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(8).astype(np.float32)
    return v / np.linalg.norm(v)


def code_terms(path: str, text: str) -> tuple[str, str]:
    return " ".join(path_terms(path)), " ".join(identifier_terms(text))


def fill(store: SqliteStore) -> list[str]:
    """Every family and table: revisions, lifecycle states, a merge, Candidates, a Profile, code, embeddings."""
    store.create_scope("team", "Team", [])
    store.create_scope("app", "App", ["team"])
    ids = []
    for i in range(30):
        m = NewMemory(f"memory {i} about deploy cache 数据库 {i % 7}", "fact", ("t",), f"key-{i}", "d", None)
        if i % 3 == 0:
            m = NewMemory(m.text, m.kind, m.tags, m.idempotency_key, m.request_digest, Embedding("m1", unit(i)))
        if i % 5 == 0:  # when it was true, given by the writer (kept by the copy; compared by read_head below)
            m = dataclasses.replace(m, observed_at=f"2024-0{1 + i % 9}-15T08:00:00.000Z")
        ids.append(store.create_memories("app" if i % 2 else "team", [m])[0].key.artifact_id)
    store.revise_memory("app", ids[1], 1, MemoryEdit("revised deploy cache text", embedding=Embedding("m1", unit(99))))
    store.change_lifecycle("app", ids[3], "forget", None)
    store.change_lifecycle("team", ids[4], "retire", None)
    store.merge_memories("app", MemoryMerge(((ids[5], 1), (ids[7], 1)), "merged deploy memory", "decision", ("m",)))
    store.create_topic("app", NewTopic("Deploy", "blue green cache", ("x",)))
    draft = ExperienceDraft(ExperienceContent("Flaky deploy", "retry", "sleep"), ("e",))
    candidate = store.propose_experience("app", draft)
    store.approve_candidate("app", candidate.candidate_id, None)
    store.propose_experience("app", draft)  # stays pending
    store.commit_profile("app", 0, [ProfileEntry("style", "tabs")])
    store.commit_profile("app", 1, [ProfileEntry("style", "spaces")])
    store.register_code_tree("app", "git:abc", "git", "/srv/app", 10_000)
    text = "def deploy_cache():\n    return 1\n"
    chunk = NewCodeChunk(1, 2, sha256_of(text), text, " ".join(identifier_terms(text)), Embedding("m1", unit(7)))
    src = NewCodeFile(
        "src/deploy.py", sha256_of(text), "python", len(text), 2, " ".join(path_terms("src/deploy.py")), (chunk,)
    )
    store.put_code_files("app", "git:abc", [src])
    store.finish_code_index("app", "git:abc", [])
    return ids


def test_copy_moves_every_table_and_resumes_after_an_interruption(tmp_path: Path) -> None:
    source = SqliteStore(tmp_path / "source.db")
    ids = fill(source)
    destination = seekdb_store(tmp_path)
    seen: list[int] = []

    def interrupt(table: str, done: int, total: int) -> None:
        seen.append(done)
        if len(seen) == 4:
            raise KeyboardInterrupt  # the user pressed Ctrl-C after four batches

    with pytest.raises(KeyboardInterrupt):
        copy_store(source, destination, code_terms, batch_size=7, progress=interrupt)
    partial = sum(count_rows(destination).values())
    assert 0 < partial < sum(count_rows(source).values())

    counts = copy_store(source, destination, code_terms, batch_size=7)
    assert all(c.matches for c in counts), counts
    assert count_rows(destination) == count_rows(source)

    # Exact reads, lifecycle facts and search arrive unchanged.
    for scope_id in ("app", "team"):
        for artifact_id in ids:
            try:
                want = source.read_head(scope_id, artifact_id)
            except Exception:
                continue
            assert destination.read_head(scope_id, artifact_id) == want
            assert destination.read_head(scope_id, artifact_id).observed == want.observed
            for revision in range(1, want.head_revision + 1):
                assert destination.read_revision(scope_id, artifact_id, revision) == source.read_revision(
                    scope_id, artifact_id, revision
                )
        terms = query_terms("deploy cache 数据库")
        assert {h.record.key for h in destination.search_text(scope_id, terms, 50)} == {
            h.record.key for h in source.search_text(scope_id, terms, 50)
        }
        want_vec = [(h.record.key, round(h.score, 5)) for h in source.search_vector(scope_id, "m1", unit(3), 5)]
        assert [(h.record.key, round(h.score, 5)) for h in destination.search_vector(scope_id, "m1", unit(3), 5)] == (
            want_vec
        )
    assert destination.read_profile_snapshot("app") == source.read_profile_snapshot("app")
    assert [h.record.key for h in destination.search_topics("app", ["deploy"], 5)] == [
        h.record.key for h in source.search_topics("app", ["deploy"], 5)
    ]
    assert [h.record.key for h in destination.search_experiences("app", ["flaki"], 5)] == [
        h.record.key for h in source.search_experiences("app", ["flaki"], 5)
    ]
    found = destination.search_code("app", ["deploy_cache"], 5)
    assert [c.chunk for c in found] == [c.chunk for c in source.search_code("app", ["deploy_cache"], 5)]
    assert found and found[0].chunk.path == "src/deploy.py"
    assert destination.embedding_status("m1") == source.embedding_status("m1")
    source.close()
    destination.close()


def test_copy_refuses_a_seekdb_destination_holding_other_data(tmp_path: Path) -> None:
    source = SqliteStore(tmp_path / "source.db")
    fill(source)
    destination = seekdb_store(tmp_path)
    destination.create_scope("team", "Another team", [])  # the same Scope id and row ids, other contents
    destination.create_memories("team", [NewMemory("another store's note", "fact", (), None, "d", None)])
    before = count_rows(destination)
    with pytest.raises(DestinationNotFromSource):
        copy_store(source, destination, code_terms, batch_size=7)
    assert count_rows(destination) == before
    source.close()
    destination.close()


def test_a_source_database_the_engine_does_not_hold_is_not_created() -> None:
    # ``seekdb:///dir?database=typo`` on an engine that is there: the directory exists, the database does not.
    require_seekdb()
    missing = dataclasses.replace(location(), database="no_such_store")
    with pytest.raises(StoreNotFound, match="no store at seekdb://"):
        open_store(missing, create=False)
    conn = connect(missing)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'no_such_store'")
            assert cur.fetchone() is None
    finally:
        conn.close()


def test_store_copy_command_reports_matching_counts(tmp_path: Path) -> None:
    require_seekdb()
    source = SqliteStore(tmp_path / "source.db")
    fill(source)
    source.close()
    # Its own engine directory, which does not exist yet: the command runs in another process, and this is the
    # suite's one engine bootstrapped from nothing (the others are copies: tests/seekdb_support.new_engine_dir).
    target = f"seekdb://{tmp_path / 'copy-engine'}"
    command = [sys.executable, "-m", "powercontext", "store", "copy", "--from", f"sqlite://{tmp_path / 'source.db'}"]
    result = forked.run([*command, "--to", target], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "every table matches" in lines[-1]
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:-1]}
    assert rows["revisions"][0] == rows["revisions"][1] and int(rows["revisions"][0]) > 30
    assert "MISMATCH" not in result.stdout
    # A second run is a no-op resume: nothing left to copy, counts still match.
    again = forked.run([*command, "--to", target], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "every table matches" in again.stdout, again.stderr


def test_copy_refuses_a_bad_url() -> None:
    result = forked.run(
        [sys.executable, "-m", "powercontext", "store", "copy", "--from", "mysql://x", "--to", "sqlite:///tmp/x.db"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: unknown store URL scheme 'mysql'")
