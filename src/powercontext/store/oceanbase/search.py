"""Full-text search on OceanBase: exact BM25 over packed postings (fulltext.py), or the engine's FULLTEXT
index on a database created with ``?fulltext=native`` (native_fulltext.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from powercontext.contract.common import ArtifactFamily
from powercontext.domain.families import EXPERIENCE, TOPIC_MEMORY
from powercontext.store.base import Scored, ScoredExperience, ScoredMemory, ScoredTopic
from powercontext.store.code import ScoredCodeChunk
from powercontext.store.core.code_index import POSTING_BUDGET, affordable_code_terms, chunk_records, code_scope_tag
from powercontext.store.core.connections import StoreConnections
from powercontext.store.core.experiences import experience_record
from powercontext.store.core.family_rows import ArtifactRow, active_heads, scope_tag
from powercontext.store.core.memory_rows import SELECT_MEMORY, memory_record
from powercontext.store.core.terms import affordable_terms, term_statistics
from powercontext.store.core.topics import topic_record
from powercontext.store.oceanbase import bm25, native_fulltext
from powercontext.store.oceanbase.dialect import Connection
from powercontext.store.oceanbase.postings import posting_term

if TYPE_CHECKING:
    from powercontext.store.oceanbase.fulltext import FtsWriter


class OceanBaseSearch(StoreConnections):
    """``search_text``, ``search_topics``, ``search_experiences`` and ``search_code`` ranked like FTS5."""

    if TYPE_CHECKING:
        _fts: FtsWriter

    def _ranked(
        self,
        conn: Connection,
        table: str,
        tag: str,
        terms: Sequence[str],
        limit: int,
        window: bm25.Window = "rank",
        window_size: int = 0,
    ) -> list[tuple[float, int]]:
        """(score, doc_id) best first: the engine's FULLTEXT index on a native database, else exact BM25."""
        if self._fts.native:
            # The engine ranks every match itself: no window is needed to bound the work.
            return native_fulltext.search(conn, table, tag, terms, min(limit, 1 << 16))
        return bm25.search(conn, table, tag, terms, limit, window, window_size, self._fts.segments)

    def search_text(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredMemory]:
        conn = self._reader()
        terms, rankable = affordable_terms(conn, scope_id, terms)
        if not terms:
            return []
        window: bm25.Window = "rank" if rankable else "newest"
        hits = self._ranked(conn, "atomic_memory_fts", scope_tag(scope_id), terms, limit, window)
        if not hits:
            return []
        marks = ",".join("?" * len(hits))
        rows = conn.execute(
            SELECT_MEMORY + f" WHERE a.id IN ({marks}) AND r.revision = a.head_revision AND a.state = 'active'"
            " AND a.scope_id = ?",
            [doc_id for _, doc_id in hits] + [scope_id],
        ).fetchall()
        by_id = {row[0]: memory_record(row) for row in rows}
        return [Scored(by_id[doc_id], score) for score, doc_id in hits if doc_id in by_id]

    @staticmethod
    def _has_active(conn: Connection, scope_id: str, family: str) -> bool:
        # Most Scopes have no Topic Memory or Experience: one index probe spares the four statements of a
        # full-text search on every prepare of such a Scope (the SQLite adapter probes for the same reason).
        row = conn.execute(
            "SELECT 1 FROM artifacts WHERE scope_id = ? AND family = ? AND state = 'active' LIMIT 1", (scope_id, family)
        ).fetchone()
        return row is not None

    def _search_family(
        self, scope_id: str, family: ArtifactFamily, table: str, terms: Sequence[str], limit: int
    ) -> list[tuple[float, ArtifactRow]]:
        """(score, active head) of one family of the Scope, best BM25 first."""
        conn = self._reader()
        if not self._has_active(conn, scope_id, family):
            return []
        hits = self._ranked(conn, table, scope_tag(scope_id), terms, limit)
        rows = active_heads(conn, [doc_id for _, doc_id in hits])
        return [(score, rows[doc_id]) for score, doc_id in hits if doc_id in rows and rows[doc_id].family == family]

    def term_statistics(self, scope_id: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """The Scope's active memories, and how many hold each term (the relevance floor's IDF)."""
        return term_statistics(self._reader(), scope_id, terms)

    def search_topics(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredTopic]:
        found = self._search_family(scope_id, TOPIC_MEMORY, "topic_memory_fts", terms, limit)
        return [Scored(topic_record(row), score) for score, row in found]

    def search_experiences(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredExperience]:
        found = self._search_family(scope_id, EXPERIENCE, "experience_fts", terms, limit)
        return [Scored(experience_record(row), score) for score, row in found]

    def search_code(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredCodeChunk]:
        conn = self._reader()
        terms, rankable = self._affordable_code_terms(conn, scope_id, terms)
        if not terms or limit < 1:
            return []
        budget = POSTING_BUDGET
        tag = code_scope_tag(scope_id)
        window: bm25.Window = "rank" if rankable else "first"
        # Every ranked match, so ties break by path and line exactly as the SQLite query orders them.
        hits = self._ranked(conn, "code_fts", tag, terms, budget if not rankable else 1 << 30, window, budget)
        if not hits:
            return []
        by_id = chunk_records(conn, [doc_id for _, doc_id in hits], scope_id)
        ranked = sorted(
            (ScoredCodeChunk(by_id[doc_id], score) for score, doc_id in hits if doc_id in by_id),
            key=lambda s: (-s.score, s.chunk.path, s.chunk.start_line),
        )
        return ranked[:limit]

    @staticmethod
    def _affordable_code_terms(conn: Connection, scope_id: str, terms: Sequence[str]) -> tuple[list[str], bool]:
        """The core's rule (``core.code_index.affordable_code_terms``) over the Scope's packed postings."""

        def documents(query: Sequence[str]) -> dict[str, int]:
            docs = bm25.term_documents(conn, "code_fts", code_scope_tag(scope_id), query)
            return {term: docs[posting_term(term)] for term in query if posting_term(term) in docs}

        return affordable_code_terms(conn, scope_id, terms, documents)
