"""Full-text search of every family, for both stores, through the store's ``FullTextIndex`` (core/fulltext.py).

Which terms a search can afford to rank is decided here once (``core.terms``, ``core.code_index``); the index
ranks them with the shared BM25, and the hits are read back starting from their ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from powercontext.store.base import MemoryRecord, Scored, ScoredExperience, ScoredMemory, ScoredTopic
from powercontext.store.code import ScoredCodeChunk
from powercontext.store.core import code_index
from powercontext.store.core.bm25 import Window
from powercontext.store.core.code_index import CODE_INDEX, POSTING_BUDGET, chunk_records, code_scope_tag
from powercontext.store.core.connections import StoreConnections
from powercontext.store.core.experiences import EXPERIENCE_FTS, experience_record
from powercontext.store.core.family_rows import ArtifactRow, FtsIndex, active_heads
from powercontext.store.core.memory_rows import SELECT_MEMORY, memory_record, scope_tag
from powercontext.store.core.terms import MEMORY_INDEX, ranked_terms, term_statistics
from powercontext.store.core.topics import TOPIC_FTS, topic_record
from powercontext.text.tokenize import MAX_QUERY_TERMS


class TextSearch(StoreConnections):
    """``search_text``, ``term_statistics``, ``search_topics``, ``search_experiences`` and ``search_code``, and
    the Topic Memory and Experience statistics of their relevance floors."""

    def search_text(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredMemory]:
        conn = self._reader()
        terms = ranked_terms(conn, scope_id, terms)
        if not terms or limit < 1:
            return []
        hits = self._fulltext.ranked(conn, MEMORY_INDEX, scope_tag(scope_id), terms, limit)
        by_id = _memories(conn, scope_id, [doc_id for _, doc_id in hits])
        return [Scored(by_id[doc_id], score) for score, doc_id in hits if doc_id in by_id]

    def term_statistics(self, scope_id: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """The Scope's active memories, and how many hold each term (the relevance floor's IDF)."""
        return term_statistics(self._reader(), scope_id, terms)

    def memories_holding(self, scope_id: str, terms: Sequence[str], limit: int) -> list[MemoryRecord]:
        """Active Atomic Memory heads holding ``terms``, the rarest held first, then the latest written; at most
        ``limit`` (``FullTextIndex.holders``). Meant for a few rare terms: every posting of each is
        read, so the caller bounds them."""
        conn = self._reader()
        ids = self._fulltext.holders(conn, MEMORY_INDEX, scope_tag(scope_id), terms, limit)
        by_id = _memories(conn, scope_id, ids)
        return [by_id[doc_id] for doc_id in ids if doc_id in by_id]

    def search_topics(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredTopic]:
        """Active Topic Memory heads of one Scope, best BM25 over title and body first."""
        found = self._search_family(TOPIC_FTS, scope_id, terms, limit)
        return [Scored(topic_record(row), score) for score, row in found]

    def search_experiences(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredExperience]:
        """Active Experience heads of one Scope (never Candidates or older revisions), best BM25 first."""
        found = self._search_family(EXPERIENCE_FTS, scope_id, terms, limit)
        return [Scored(experience_record(row), score) for score, row in found]

    def topic_term_statistics(self, scope_id: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """The Scope's active Topic Memories, and how many hold each term (the relevance floor's IDF)."""
        return self._family_statistics(TOPIC_FTS, scope_id, terms)

    def experience_term_statistics(self, scope_id: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        """The Scope's active Experiences, and how many hold each term (the relevance floor's IDF)."""
        return self._family_statistics(EXPERIENCE_FTS, scope_id, terms)

    def _family_statistics(self, index: FtsIndex, scope_id: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        conn = self._reader()
        (active,) = conn.execute(
            "SELECT COUNT(*) FROM artifacts WHERE scope_id = ? AND family = ? AND state = 'active'",
            (scope_id, index.family),
        ).fetchone()
        if not active:
            return 0, {}
        return int(active), self._fulltext.documents(conn, index.table, scope_tag(scope_id), terms)

    def _search_family(
        self, index: FtsIndex, scope_id: str, terms: Sequence[str], limit: int
    ) -> list[tuple[float, ArtifactRow]]:
        """Active heads of one Scope matching any term, best BM25 first, as (higher-is-better score, row)."""
        # These families are small and rank without a posting budget: a query's first terms are enough.
        distinct = [t for t in dict.fromkeys(terms) if t][:MAX_QUERY_TERMS]
        if not distinct or limit < 1:
            return []
        conn = self._reader()
        # Most Scopes have few or none of these families: an index probe (~8 µs) spares a full-text
        # search on every prepare of such a Scope.
        probe = conn.execute(
            "SELECT 1 FROM artifacts WHERE scope_id = ? AND family = ? AND state = 'active' LIMIT 1",
            (scope_id, index.family),
        )
        if probe.fetchone() is None:
            return []
        hits = self._fulltext.ranked(conn, index.table, scope_tag(scope_id), distinct, limit)
        rows = active_heads(conn, [doc_id for _, doc_id in hits])
        return [
            (score, rows[doc_id]) for score, doc_id in hits if doc_id in rows and rows[doc_id].family == index.family
        ]

    def search_code(self, scope_id: str, terms: Sequence[str], limit: int) -> list[ScoredCodeChunk]:
        conn = self._reader()
        terms, rankable = self.affordable_code_terms(conn, scope_id, terms)
        if not terms or limit < 1:
            return []
        # When even the rarest term is in too many chunks to rank them all, only the first POSTING_BUDGET
        # matches (in index order) are ranked. Every ranked match is kept, so ties break by path and line.
        window: Window = "rank" if rankable else "first"
        depth = POSTING_BUDGET if not rankable else 1 << 30
        tag = code_scope_tag(scope_id)
        hits = self._fulltext.ranked(conn, CODE_INDEX, tag, terms, depth, window, POSTING_BUDGET)
        if not hits:
            return []
        by_id = chunk_records(conn, [doc_id for _, doc_id in hits], scope_id)
        found = sorted(
            (ScoredCodeChunk(by_id[doc_id], score) for score, doc_id in hits if doc_id in by_id),
            key=lambda s: (-s.score, s.chunk.path, s.chunk.start_line),
        )
        return found[:limit]

    def affordable_code_terms(self, conn: Any, scope_id: str, terms: Sequence[str]) -> tuple[list[str], bool]:
        """The core's rule (``core.code_index.affordable_code_terms``) over the Scope's own code index."""

        def documents(query: Sequence[str]) -> dict[str, int]:
            return self._fulltext.documents(conn, CODE_INDEX, code_scope_tag(scope_id), query)

        return code_index.affordable_code_terms(conn, scope_id, terms, documents)


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
