"""Full-text search on SQLite: each Scope's own FTS5 tables, ranked by the shared BM25 (store/core/bm25.py).

The index writes are the core's (``core.scope_fts``, ``core.terms``, ``core.family_rows.FtsIndex``); FTS5 keeps
the postings, ``postings.read_postings`` reads them as the formula's inputs, and ``core.bm25`` ranks them exactly
as the OceanBase store does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from powercontext.store.base import MemoryRecord, Scored, ScoredExperience, ScoredMemory, ScoredTopic
from powercontext.store.code import ScoredCodeChunk
from powercontext.store.core import bm25, code_index, scope_fts
from powercontext.store.core.code_index import POSTING_BUDGET, chunk_records, code_scope_tag
from powercontext.store.core.connections import StoreConnections
from powercontext.store.core.driver import sqlite
from powercontext.store.core.experiences import EXPERIENCE_FTS, experience_record
from powercontext.store.core.family_rows import ArtifactRow, FtsIndex, active_heads
from powercontext.store.core.memory_rows import SELECT_MEMORY, memory_record, scope_tag
from powercontext.store.core.terms import affordable_terms, term_statistics
from powercontext.store.core.topics import TOPIC_FTS, topic_record
from powercontext.store.sqlite.postings import read_postings, window_postings
from powercontext.text.tokenize import MAX_QUERY_TERMS
from powercontext.text.tokenize import terms as index_terms

# Path terms weigh more than body terms: a query naming a module should find that module first.
_CODE_COLUMNS: Final = ("path_terms", "terms")
_CODE_WEIGHTS: Final = (2.0, 1.0)


def ranked(
    conn: Any,
    table: str,
    columns: Sequence[str],
    weights: Sequence[float],
    terms: Sequence[str],
    limit: int,
    window: bm25.Window = "rank",
    window_size: int = 0,
) -> list[tuple[float, int]]:
    """(score, rowid) of the Scope table's documents matching any term, best first; none if it has no table."""
    query = list(dict.fromkeys(t for t in terms if t))
    if not query or limit < 1:
        return []
    try:
        postings = read_postings(conn, table, columns, query)
    except sqlite.OperationalError as exc:
        if scope_fts.missing_table(exc):
            return []
        raise
    return bm25.rank(postings, query, limit, weights, window, window_size)


class SqliteSearch(StoreConnections):
    """``search_text``, ``search_topics``, ``search_experiences`` and ``search_code`` over FTS5 postings."""

    def search_text(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredMemory]:
        conn = self._reader()
        terms, rankable = affordable_terms(conn, scope_id, terms)
        if not terms or limit < 1:
            return []
        table = scope_fts.table_name("atomic_memory_fts", scope_tag(scope_id))
        if not rankable:
            return _newest_window(conn, table, scope_id, terms, limit)
        hits = ranked(conn, table, ("terms",), (1.0,), terms, limit)
        by_id = _memories(conn, scope_id, [doc_id for _, doc_id in hits])
        return [Scored(by_id[doc_id], score) for score, doc_id in hits if doc_id in by_id]

    def term_statistics(self, scope_id: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """The Scope's active memories, and how many hold each term (the relevance floor's IDF)."""
        return term_statistics(self._reader(), scope_id, terms)

    def search_topics(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredTopic]:
        """Active Topic Memory heads of one Scope, best BM25 over title and body first."""
        found = search_family(self._reader(), TOPIC_FTS, scope_id, terms, limit)
        return [Scored(topic_record(row), score) for score, row in found]

    def search_experiences(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredExperience]:
        """Active Experience heads of one Scope (never Candidates or older revisions), best BM25 first."""
        found = search_family(self._reader(), EXPERIENCE_FTS, scope_id, terms, limit)
        return [Scored(experience_record(row), score) for score, row in found]

    def search_code(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredCodeChunk]:
        conn = self._reader()
        table = scope_fts.table_name("code_fts", code_scope_tag(scope_id))
        try:
            terms, rankable = affordable_code_terms(conn, scope_id, terms)
        except sqlite.OperationalError as exc:
            if scope_fts.missing_table(exc):
                return []
            raise
        if not terms or limit < 1:
            return []
        # When even the rarest term is in too many chunks to rank them all, only the first POSTING_BUDGET
        # matches (in index order) are ranked. Every ranked match is kept, so ties break by path and line.
        window: bm25.Window = "rank" if rankable else "first"
        hits = ranked(
            conn,
            table,
            _CODE_COLUMNS,
            _CODE_WEIGHTS,
            terms,
            POSTING_BUDGET if not rankable else 1 << 30,
            window,
            POSTING_BUDGET,
        )
        if not hits:
            return []
        by_id = chunk_records(conn, [doc_id for _, doc_id in hits], scope_id)
        found = sorted(
            (ScoredCodeChunk(by_id[doc_id], score) for score, doc_id in hits if doc_id in by_id),
            key=lambda s: (-s.score, s.chunk.path, s.chunk.start_line),
        )
        return found[:limit]


def _memories(conn: Any, scope_id: str, ids: Sequence[int]) -> dict[int, MemoryRecord]:
    """The Scope's active heads among ``ids``, by rowid."""
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    # ``+a.scope_id``: the Scope only filters the hits. As an index constraint the planner may start from it
    # and walk every memory of the Scope (a million rows per call, issue 39).
    rows = conn.execute(
        SELECT_MEMORY + f" WHERE a.id IN ({marks}) AND r.revision = a.head_revision AND a.state = 'active'"
        " AND +a.scope_id = ?",
        [*ids, scope_id],
    ).fetchall()
    return {row[0]: memory_record(row) for row in rows}


def _newest_window(conn: Any, table: str, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredMemory]:
    """BM25 over only the ``limit`` newest memories matching ``terms`` (even the rarest is past the budget).

    FTS5 walks a doclist backwards by rowid and stops at ``limit``: the cost is the window's, not the term's.
    """
    query = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
    try:
        window = [
            row[0]
            for row in conn.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT ?", (query, limit)
            )
        ]
    except sqlite.OperationalError as exc:
        if scope_fts.missing_table(exc):
            return []
        raise
    by_id = _memories(conn, scope_id, window)
    _, counts = term_statistics(conn, scope_id, terms)
    bodies = {doc_id: index_terms(record.text) for doc_id, record in by_id.items()}
    hits = bm25.rank(window_postings(conn, table, terms, bodies, counts), terms, limit, (1.0,))
    return [Scored(by_id[doc_id], score) for score, doc_id in hits if doc_id in by_id]


def search_family(
    conn: Any, index: FtsIndex, scope_id: str, terms: Sequence[str], limit: int
) -> list[tuple[float, ArtifactRow]]:
    """Active heads of one Scope matching any term, best BM25 first, as (higher-is-better score, row)."""
    # These families are small and rank without a posting budget: a query's first terms are enough.
    distinct = [t for t in dict.fromkeys(terms) if t][:MAX_QUERY_TERMS]
    if not distinct or limit < 1:
        return []
    # Most Scopes have few or none of these families: an index probe (~8 µs) spares a full-text
    # search on every prepare of such a Scope.
    if (
        conn.execute(
            "SELECT 1 FROM artifacts WHERE scope_id = ? AND family = ? AND state = 'active' LIMIT 1",
            (scope_id, index.family),
        ).fetchone()
        is None
    ):
        return []
    table = scope_fts.table_name(index.table, scope_tag(scope_id))
    hits = ranked(conn, table, index.columns, index.weights, distinct, limit)
    rows = active_heads(conn, [doc_id for _, doc_id in hits])
    return [(score, rows[doc_id]) for score, doc_id in hits if doc_id in rows and rows[doc_id].family == index.family]


def affordable_code_terms(conn: Any, scope_id: str, terms: Sequence[str]) -> tuple[list[str], bool]:
    """The core's rule (``core.code_index.affordable_code_terms``) over the Scope's own ``fts5vocab`` table."""

    def documents(query: Sequence[str]) -> dict[str, int]:
        marks = ",".join("?" * len(query))
        vocab = scope_fts.vocab_name(code_scope_tag(scope_id))
        return dict(conn.execute(f"SELECT term, doc FROM {vocab} WHERE term IN ({marks})", list(query)))

    return code_index.affordable_code_terms(conn, scope_id, terms, documents)
