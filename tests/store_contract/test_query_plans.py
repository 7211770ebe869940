"""Every statement a prepare runs starts from the search hits, never from a walk over a Scope's rows.

At a million memories in one Scope a prepare took 5.8 s (issue 39): for the search that takes the newest matches
of a common term, SQLite's planner walked all the Scope's ``artifacts`` rows (``SEARCH a USING INDEX
sqlite_autoindex_artifacts_1 (scope_id=?)``) and probed the hits for each. The plan depends on the statement's
shape, not on the data, so a Scope just past the posting budget shows it: this test runs real prepares (memories
past the budget, Topic Memory, Experience, code) against a real SQLite file, records each statement as executed
(parameters bound) and fails on any plan step that reads a Scope's rows by ``scope_id`` alone or scans a table.
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
from powercontext.store.core.terms import POSTING_BUDGET
from powercontext.store.sqlite import SqliteStore
from tests.support import sha256_of

SCOPE = "team:plans"
# "ledger" is in more memories than the posting budget ranks (the newest-window path); "checkpoint" is rare.
QUERIES = ("ledger", "ledger checkpoint", "checkpoint", "write_ahead_log", "nothing-matches-this")

# A plan step that reads rows of a Scope without the hits bounding it: a full scan of a stored table, or an
# index search constrained by the Scope alone (every memory of the Scope).
# (The connection's own temp-schema catalog is exempt: it lists the few fts5vocab tables a search made, no rows.)
_SCAN = re.compile(r"^SCAN (?!hits\b|temp\.sqlite_master\b)[\w.]+(?: USING .*)?$")  # FTS5: "SCAN x VIRTUAL TABLE …"
# (``code_trees`` is exempt: one row per registered tree, not per memory or chunk.)
_SCOPE_WALK = re.compile(r"^SEARCH (?!code_trees\b)\w+ USING (?:COVERING )?INDEX \w+ \(scope_id=\?\)$")
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


def _seed(store: SqliteStore) -> None:
    store.create_scope(SCOPE, "plans", [])
    texts = [f"ledger note {i} about shard {i % 97}" for i in range(POSTING_BUDGET + 200)]
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


_TEMP_VOCAB = re.compile(r"\btemp\.((\w+_fts_[sc][0-9a-f]{24})_(instances|rows))\b")


def _plan(conn: Any, statement: str) -> list[str]:
    # The searches read postings through ``fts5vocab`` tables in their connection's temp schema: this one
    # gets the same ones.
    for name, table, kind in _TEMP_VOCAB.findall(statement):
        kind = "instance" if kind == "instances" else "row"
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{name} USING fts5vocab(main, {table}, {kind})")
    return [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + statement)]


def test_no_statement_of_a_prepare_walks_a_scopes_rows(tmp_path: Path) -> None:
    TracedStore.statements = []
    store = TracedStore(tmp_path / "plans.db")
    try:
        _seed(store)
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

    assert any("rowid DESC" in s for s in statements), "the newest-window search ran (a term past the budget)"
    assert any("code_fts" in s for s in statements) and any("topic_memory_fts" in s for s in statements)
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
