"""Full-text search on SQLite: each Scope's own FTS5 tables ranked by FTS5's ``bm25()``.

The index writes are the core's (``core.scope_fts``, ``core.terms``, ``core.family_rows.FtsIndex``); only the
ranking queries, which use FTS5's ``MATCH``, ``bm25()`` and ``fts5vocab``, live here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from powercontext.store.base import Scored, ScoredExperience, ScoredMemory, ScoredTopic
from powercontext.store.code import CodeChunkRecord, ScoredCodeChunk
from powercontext.store.core import code_index, scope_fts
from powercontext.store.core.code_index import POSTING_BUDGET, code_scope_tag
from powercontext.store.core.connections import StoreConnections
from powercontext.store.core.driver import sqlite
from powercontext.store.core.experiences import EXPERIENCE_FTS, experience_record
from powercontext.store.core.family_rows import SELECT_ROW, ArtifactRow, FtsIndex, artifact_row
from powercontext.store.core.memory_rows import SELECT_MEMORY, memory_record, scope_tag
from powercontext.store.core.terms import affordable_terms
from powercontext.store.core.topics import TOPIC_FTS, topic_record
from powercontext.text.tokenize import MAX_QUERY_TERMS

# Path terms weigh more than body terms: a query naming a module should find that module first.
_CODE_WEIGHTS: Final = "0.0, 2.0, 1.0"

# The join starts from the search hits, always: ``CROSS JOIN`` is SQLite's fixed join order. With a plain JOIN the
# planner may walk the Scope's ``artifacts`` rows first and probe the hits (a Bloom filter on them) — at a million
# memories one such prepare took 5.8 s instead of 1 ms (issue 39). tests/store_contract/test_query_plans.py holds
# every statement of the prepare path to this.
_FROM_HITS: Final = "FROM hits CROSS JOIN artifacts a ON a.id = hits.id CROSS JOIN revisions r ON r.artifact = a.id"
_JOINED: Final = "FROM artifacts a JOIN revisions r ON r.artifact = a.id"
_MEMORY_HITS: Final = SELECT_MEMORY.replace(_JOINED, _FROM_HITS).replace("SELECT a.id", "SELECT hits.rank, a.id")
_FAMILY_HITS: Final = SELECT_ROW.replace(_JOINED, _FROM_HITS).replace("SELECT a.id", "SELECT hits.rank, a.id")


def _quoted(terms: Sequence[str]) -> str:
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def _code_match(terms: Sequence[str]) -> str:
    return f"{{path_terms terms}} : ( {_quoted(terms)} )"


class SqliteSearch(StoreConnections):
    """``search_text``, ``search_topics``, ``search_experiences`` and ``search_code`` over FTS5."""

    def search_text(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredMemory]:
        conn = self._reader()
        terms, rankable = affordable_terms(conn, scope_id, terms)
        if not terms:
            return []
        # When even the rarest term is in too many memories to rank them all, take the newest matches
        # (a rowid walk, no scoring) and rank only those.
        window = "rank" if rankable else "rowid DESC"
        table = scope_fts.table_name("atomic_memory_fts", scope_tag(scope_id))
        try:
            rows = conn.execute(
                f"WITH hits AS (SELECT rowid AS id, bm25({table}, 0.0, 1.0) AS rank FROM {table}"
                f" WHERE {table} MATCH ? ORDER BY {window} LIMIT ?) "
                + _MEMORY_HITS
                + " WHERE r.revision = a.head_revision AND a.state = 'active' AND a.scope_id = ? ORDER BY hits.rank",
                # The Scope's own table holds only its rows: no scope_tag filter (its phrase added exactly 0.0).
                (f"terms : ( {_quoted(terms)} )", limit, scope_id),
            ).fetchall()
        except sqlite.OperationalError as exc:
            if scope_fts.missing_table(exc):
                return []
            raise
        # bm25() is lower-is-better; the public score is higher-is-better.
        return [Scored(memory_record(row[1:]), -row[0]) for row in rows]

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
        tag = code_scope_tag(scope_id)
        table = scope_fts.table_name("code_fts", tag)
        # When even the rarest term is in too many chunks to rank them all, only the first
        # POSTING_BUDGET matches (in index order) are ranked.
        try:
            terms, rankable = affordable_code_terms(conn, scope_id, terms)
            if not terms:
                return []
            window = "ORDER BY rank LIMIT ?" if rankable else "LIMIT ?"
            rows = conn.execute(
                f"WITH hits AS (SELECT rowid AS id, bm25({table}, {_CODE_WEIGHTS}) AS rank FROM {table}"
                f" WHERE {table} MATCH ? {window})"
                " SELECT hits.rank, t.scope_id, t.fingerprint, f.path, f.file_sha256, f.language,"
                " c.start_line, c.end_line, c.snippet_sha256, c.text"
                " FROM hits CROSS JOIN code_chunks c ON c.id = hits.id CROSS JOIN code_files f ON f.id = c.file"
                " CROSS JOIN code_trees t ON t.id = f.tree WHERE t.scope_id = ?"
                " ORDER BY hits.rank, f.path, c.start_line LIMIT ?",
                # The Scope's own table (scope_fts.py) holds only its chunks: no scope_tag filter.
                (
                    f"{{path_terms terms}} : ( {_quoted(terms)} )",
                    limit if rankable else POSTING_BUDGET,
                    scope_id,
                    limit,
                ),
            ).fetchall()
        except sqlite.OperationalError as exc:
            if scope_fts.missing_table(exc):
                return []
            raise
        # bm25() is lower-is-better; the public score is higher-is-better.
        return [ScoredCodeChunk(CodeChunkRecord(*row[1:]), -row[0]) for row in rows]


def search_family(
    conn: Any, index: FtsIndex, scope_id: str, terms: Sequence[str], limit: int
) -> list[tuple[float, ArtifactRow]]:
    """Active heads of one Scope matching any term, best BM25 first, as (higher-is-better score, row)."""
    # These families are small and rank without a posting budget: a query's first terms are enough.
    distinct = [t for t in dict.fromkeys(terms) if t][:MAX_QUERY_TERMS]
    if not distinct or limit < 1:
        return []
    # Most Scopes have few or none of these families: an index probe (~8 µs) spares an FTS5
    # query (~150 µs even on an empty table) on every prepare of such a Scope.
    if (
        conn.execute(
            "SELECT 1 FROM artifacts WHERE scope_id = ? AND family = ? AND state = 'active' LIMIT 1",
            (scope_id, index.family),
        ).fetchone()
        is None
    ):
        return []
    column_filter = index.columns[0] if len(index.columns) == 1 else "{" + " ".join(index.columns) + "}"
    weights = ", ".join(str(w) for w in (0.0, *index.weights))
    # The Scope's own table (scope_fts.py): no scope_tag filter needed.
    table = scope_fts.table_name(index.table, scope_tag(scope_id))
    try:
        rows = conn.execute(
            f"WITH hits AS (SELECT rowid AS id, bm25({table}, {weights}) AS rank FROM {table}"
            f" WHERE {table} MATCH ? ORDER BY rank LIMIT ?) "
            + _FAMILY_HITS
            + " WHERE r.revision = a.head_revision AND a.state = 'active' AND a.scope_id = ? AND a.family = ?"
            " ORDER BY hits.rank, a.id",
            (f"{column_filter} : ( {_quoted(distinct)} )", limit, scope_id, index.family),
        ).fetchall()
    except sqlite.OperationalError as exc:
        if scope_fts.missing_table(exc):
            return []
        raise
    # bm25() is lower-is-better; the public score is higher-is-better.
    return [(-raw[0], artifact_row(raw[1:])) for raw in rows]


def affordable_code_terms(conn: Any, scope_id: str, terms: Sequence[str]) -> tuple[list[str], bool]:
    """The core's rule (``core.code_index.affordable_code_terms``) over the Scope's own ``fts5vocab`` table."""

    def documents(query: Sequence[str]) -> dict[str, int]:
        marks = ",".join("?" * len(query))
        vocab = scope_fts.vocab_name(code_scope_tag(scope_id))
        return dict(conn.execute(f"SELECT term, doc FROM {vocab} WHERE term IN ({marks})", list(query)))

    return code_index.affordable_code_terms(conn, scope_id, terms, documents)
