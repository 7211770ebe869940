"""The SQLite store's ``FullTextIndex`` (core/fulltext.py): one contentless FTS5 table per (index, Scope).

FTS5 keeps the postings; ``postings.read_postings`` reads them as the inputs of the shared BM25 (core/bm25.py),
so scores and order are the OceanBase store's. Writes go into the Scope's table inside the caller's transaction
(FTS5 is transactional with the rest of the database), created by the first write of that Scope.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from powercontext.store.core import bm25, scope_fts
from powercontext.store.core.bm25 import Window
from powercontext.store.core.driver import sqlite
from powercontext.store.core.fulltext import INDEXES
from powercontext.store.core.terms import MEMORY_INDEX
from powercontext.store.sqlite.postings import read_postings, temp_vocab, window_postings
from powercontext.text.tokenize import terms as index_terms

# The bodies of the newest window's memories (their indexed terms are the tokenizer's terms of the body).
_HEAD_BODIES = (
    "SELECT a.id, r.body FROM artifacts a CROSS JOIN revisions r ON r.artifact = a.id AND r.revision = a.head_revision"
    " WHERE a.id IN ({marks})"
)


class Fts5Index:
    """``FullTextIndex`` over each Scope's own FTS5 tables (``core.scope_fts``)."""

    def add(self, conn: Any, index: str, doc_id: int, scope_tag: str, columns: Sequence[str]) -> None:
        spec = INDEXES[index]
        table = scope_fts.ensure_table(conn, index, scope_tag)
        names = ", ".join(spec.columns)
        marks = ", ".join("?" * len(spec.columns))
        conn.execute(
            f"INSERT INTO {table} (rowid, scope_tag, {names}) VALUES (?, ?, {marks})", (doc_id, scope_tag, *columns)
        )

    def remove(self, conn: Any, index: str, doc_id: int, scope_tag: str) -> None:
        table = scope_fts.ensure_table(conn, index, scope_tag)
        conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (doc_id,))

    def ranked(
        self,
        conn: Any,
        index: str,
        scope_tag: str,
        terms: Sequence[str],
        limit: int,
        window: Window = "rank",
        window_size: int = 0,
    ) -> list[tuple[float, int]]:
        spec = INDEXES[index]
        query = list(dict.fromkeys(t for t in terms if t))
        if not query or limit < 1:
            return []
        table = scope_fts.table_name(index, scope_tag)
        try:
            if window == "newest" and index == MEMORY_INDEX:
                return _newest_window(conn, table, query, limit)
            postings = read_postings(conn, table, spec.columns, query)
        except sqlite.OperationalError as exc:
            if scope_fts.missing_table(exc):
                return []
            raise
        return bm25.rank(postings, query, limit, spec.weights, window, window_size)

    def documents(self, conn: Any, index: str, scope_tag: str, terms: Sequence[str]) -> dict[str, int]:
        query = list(dict.fromkeys(t for t in terms if t))
        if not query:
            return {}
        marks = ",".join("?" * len(query))
        vocab = _row_vocab(conn, scope_fts.table_name(index, scope_tag))
        try:
            return dict(conn.execute(f"SELECT term, doc FROM {vocab} WHERE term IN ({marks})", query))
        except sqlite.OperationalError as exc:
            if scope_fts.missing_table(exc):
                return {}
            raise


def _newest_window(conn: Any, table: str, query: Sequence[str], limit: int) -> list[tuple[float, int]]:
    """BM25 over only the ``limit`` newest memories matching any term (even the rarest is past the budget).

    FTS5 walks a doclist backwards by rowid and stops at ``limit``: the cost is the window's, not the term's.
    Reading every posting of a term in tens of thousands of memories through ``fts5vocab`` cost seconds per
    prepare at a million memories (issue 39); the window's term frequencies come from the terms its memories were
    indexed with instead, and ``n(t)`` from the FTS5 table's own document counts.
    """
    match = " OR ".join('"' + t.replace('"', '""') + '"' for t in query)
    window = [
        row[0]
        for row in conn.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT ?", (match, limit)
        )
    ]
    if not window:
        return []
    rows = conn.execute(_HEAD_BODIES.format(marks=",".join("?" * len(window))), window).fetchall()
    bodies = {int(doc): index_terms(body) for doc, body in rows}
    marks = ",".join("?" * len(query))
    vocab = _row_vocab(conn, table)
    counts = dict(conn.execute(f"SELECT term, doc FROM {vocab} WHERE term IN ({marks})", list(query)))
    return bm25.rank(window_postings(conn, table, query, bodies, counts), query, limit, (1.0,))


def _row_vocab(conn: Any, table: str) -> str:
    """The Scope table's ``fts5vocab`` of documents per term (a persistent one for code, else the connection's)."""
    if table.startswith("code_fts_"):
        return table + "_vocab"
    return temp_vocab(conn, table, "row")
