"""Every statement a prepare runs starts from the search hits, never from a walk over a Scope's rows.

At a million memories in one Scope a prepare took 5.8 s (issue 39): for the search that took the newest matches
of a common term, SQLite's planner walked all the Scope's ``artifacts`` rows (``SEARCH a USING INDEX
sqlite_autoindex_artifacts_1 (scope_id=?)``) and probed the hits for each. The plan depends on the statement's
shape, not on the data, so a Scope with a term past the old posting budget shows it: this test runs real prepares
(memories, Topic Memory, Experience, code) against a real SQLite file, records each statement as executed
(parameters bound) and fails on any plan step that reads a Scope's rows by ``scope_id`` alone, reads every
posting segment of a Scope's index rather than the query terms' ones, or scans a table.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

from powercontext.contract.prepare import PrepareContextRequest
from powercontext.runtime import Runtime
from powercontext.store.base import ExperienceContent, ExperienceDraft, NewMemory, NewTopic
from powercontext.store.code import NewCodeChunk, NewCodeFile
from powercontext.store.core.driver import sqlite
from powercontext.store.core.store import SqlStore
from powercontext.store.sqlite import SqliteStore
from tests.support import sha256_of

SCOPE = "team:plans"
# "ledger" is in more memories than the old posting budget (8,000) let a search rank; "checkpoint" is rare.
COMMON_TERM_MEMORIES = 8_200
QUERIES = ("ledger", "ledger checkpoint", "checkpoint", "write_ahead_log", "nothing-matches-this")

# A plan step that reads rows of a Scope without the hits bounding it: a full scan of a stored table, or an
# index search constrained by the Scope alone (every memory of the Scope).
_SCAN = re.compile(r"^SCAN [\w.]+(?: USING .*)?$")
# (``code_trees`` is exempt: one row per registered tree, not per memory or chunk; so is ``fts_tail``: at most
# ``MAX_TAIL_ROWS`` rows per index and Scope, store/sqlite/tails.py, bounded by test_sqlite_tails.py.)
_SCOPE_WALK = re.compile(
    r"^SEARCH (?!code_trees\b|fts_tail\b)\w+ USING (?:COVERING )?INDEX \w+"
    r" \((?:scope_id=\?|fts_table=\? AND scope_tag=\?)\)$"
)  # the second form: every posting segment of a Scope's index, not only the query terms' ones
# FTS5's own reads of its shadow tables (its configuration row), which the module names with the schema.
_FTS5_INTERNAL = "FROM 'main'."


class TracedStore(SqliteStore):
    """The real store whose connections also record every statement they run, with its parameters bound."""

    statements: list[str]

    def _connect(self) -> Any:
        conn = super()._connect()
        conn.set_trace_callback(self.statements.append)
        return conn


def _code_file(path: str, text: str) -> NewCodeFile:
    from powercontext.code.identifiers import identifier_terms, path_terms

    lines = text.count("\n")
    chunk = NewCodeChunk(1, lines, sha256_of(text), text, " ".join(identifier_terms(text)))
    return NewCodeFile(path, sha256_of(text), "python", len(text), lines, " ".join(path_terms(path)), (chunk,))


def seed(store: SqlStore) -> None:
    """The Scope the plans are checked on (both stores): memories past the old budget, a topic, an experience, code."""
    store.create_scope(SCOPE, "plans", [])
    texts = [f"ledger note {i} about shard {i % 97}" for i in range(COMMON_TERM_MEMORIES)]
    texts[17] += " checkpoint"
    for start in range(0, len(texts), 1_000):
        store.create_memories(SCOPE, [NewMemory(t, "fact", ()) for t in texts[start : start + 1_000]])
    store.create_topic(SCOPE, NewTopic("ledger topic", "the ledger checkpoint runs nightly", ()))
    draft = ExperienceDraft(ExperienceContent("ledger deploy", "checkpoint first", "skipped the checkpoint"), ())
    store.approve_candidate(SCOPE, store.propose_experience(SCOPE, draft).candidate_id, None)
    store.register_code_tree(SCOPE, "dir:one", "dir", "/srv/one", 100_000)
    store.put_code_files(
        SCOPE, "dir:one", [_code_file("ledger/wal.py", "def write_ahead_log(db):\n    return db.checkpoint()\n")]
    )
    store.finish_code_index(SCOPE, "dir:one", [])


def _plan(conn: Any, statement: str) -> list[str]:
    return [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + statement)]


def test_no_statement_of_a_prepare_walks_a_scopes_rows(tmp_path: Path) -> None:
    TracedStore.statements = []
    store = TracedStore(tmp_path / "plans.db")
    try:
        seed(store)
        runtime = Runtime(store)
        TracedStore.statements.clear()
        for query in QUERIES:
            request = PrepareContextRequest(scope_id=SCOPE, query=query, include_receipt=True, include_code=True)
            body = runtime.prepare(request, str(uuid.uuid4())).response_body()
            assert b"ledger" in body or query in ("write_ahead_log", "nothing-matches-this")
        statements = [
            s
            for s in dict.fromkeys(TracedStore.statements)
            if s.lstrip().upper().startswith(("SELECT", "WITH")) and _FTS5_INTERNAL not in s
        ]
    finally:
        store.close()

    searched = [s for s in statements if "FROM fts_segments" in s]
    for index in ("atomic_memory_fts", "topic_memory_fts", "code_fts"):
        assert any(f"'{index}'" in s for s in searched), f"no search of {index} ran"
    conn = sqlite.connect(str(tmp_path / "plans.db"))
    try:
        walks = {
            step: statement
            for statement in statements
            for step in _plan(conn, statement)
            if _SCAN.match(step) or _SCOPE_WALK.match(step)
        }
    finally:
        conn.close()
    assert walks == {}, "\n".join(f"{step}  <-  {statement}" for step, statement in walks.items())


def test_the_vector_reads_use_their_indexes_not_the_vector_rows(tmp_path: Path) -> None:
    """The embedding backlog (counted before a Server with a model serves) looks each active head up in the model
    index, and a Scope's vector matrix loads its heads in rowid order, the order the vectors were written in.
    Through ``artifact_embeddings`` itself, WITHOUT ROWID as it was, the backlog at a million memories took
    27-29 s and the matrix ~50 s (migration 15)."""
    import numpy as np

    TracedStore.statements = []
    store = TracedStore(tmp_path / "vectors.db")
    try:
        store.create_scope(SCOPE, "plans", [])
        store.create_memories(SCOPE, [NewMemory(f"note {i}", "fact", ()) for i in range(50)])
        TracedStore.statements.clear()
        backlog = store.embedding_backlog("model-a", 0, 1_000)
        assert len(backlog) == 50
        assert store.embedding_status("model-a").active_heads == 50
        vectors = np.eye(50, 8, dtype=np.float32) + 0.01
        assert store.write_embeddings("model-a", list(zip(backlog, vectors, strict=True))) == 50
        assert len(store.search_vector(SCOPE, "model-a", vectors[3], 5)) == 5
        statements = [
            s for s in dict.fromkeys(TracedStore.statements) if "artifact_embeddings" in s and s.startswith("SELECT")
        ]
    finally:
        store.close()
    conn = sqlite.connect(str(tmp_path / "vectors.db"))
    try:
        plans = {statement: _plan(conn, statement) for statement in statements}
    finally:
        conn.close()
    lookups = [step for plan in plans.values() for step in plan if step.startswith("SEARCH e ")]
    walks = [step for plan in plans.values() for step in plan if step.startswith("SEARCH a USING INDEX")]
    assert len(plans) == 3, plans  # the backlog, the status, the matrix
    assert "SEARCH a USING INDEX artifacts_by_scope_rowid (scope_id=? AND family=?)" in walks
    assert all("INDEX artifact_embedding_models" in step for step in lookups), plans
    assert sum("COVERING INDEX artifact_embedding_models" in step for step in lookups) == 2, plans
