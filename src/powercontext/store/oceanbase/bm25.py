"""A Scope's packed postings read as the inputs of the shared BM25 (store/core/bm25.py; fulltext.py has the layout)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from powercontext.store.core import topk
from powercontext.store.core.bm25 import Postings, Window, holders
from powercontext.store.core.packed import joined, stored_terms
from powercontext.store.oceanbase.postings import SEGMENT_POSTINGS, TABLES, SegmentCounts

if TYPE_CHECKING:
    from powercontext.store.oceanbase.dialect import Connection

__all__ = ["Window", "holders_of", "search", "term_documents"]


def search(
    conn: Connection,
    table: str,
    scope_tag: str,
    terms: Sequence[str],
    limit: int,
    window: Window = "rank",
    window_size: int = 0,
    segments: SegmentCounts | None = None,
) -> list[tuple[float, int]]:
    """(score, doc_id) of the Scope's documents matching any term, best first (ties: lower doc_id first).

    ``window`` mirrors the SQLite adapter's cut when ranking every match is unaffordable: ``first`` ranks
    only the ``window_size`` lowest doc ids (code search).
    """
    query = stored_terms(terms)
    if not query or limit < 1:
        return []
    postings = _read_postings(conn, table, scope_tag, query, segments)
    return topk.ranked(postings, query, limit, TABLES[table].weights, window, window_size)


def holders_of(
    conn: Connection, table: str, scope_tag: str, terms: Sequence[str], limit: int, segments: SegmentCounts | None
) -> list[int]:
    """``core.bm25.holders`` over the Scope's packed postings of ``terms``."""
    query = stored_terms(terms)
    if not query or limit < 1:
        return []
    return holders(_read_postings(conn, table, scope_tag, query, segments), limit)


def _read_postings(
    conn: Connection, table: str, scope_tag: str, query: list[str], segments: SegmentCounts | None
) -> Postings:
    marks = ", ".join(["%s"] * len(query))
    # One round trip for every input of the formula, all of them the Scope's own: its totals row, and its
    # segments of the query terms (their sizes add up to n(t)).
    rows = conn.query(
        "SELECT NULL, docs, tokens, 0, NULL FROM fts_scope_totals WHERE fts_table = %s AND scope_tag = %s UNION ALL"
        " SELECT term, n, 0, lo, postings FROM fts_segments"
        f" WHERE fts_table = %s AND term IN ({marks}) AND scope_tag = %s",
        (table, scope_tag, table, *query, scope_tag),
    ).fetchall()
    n_rows = n_tokens = 0
    counts: Counter[str] = Counter()
    parts: dict[str, list[tuple[int, bytes]]] = {}
    open_segments: Counter[str] = Counter()
    for term, n, tokens, lo, blob in rows:
        if term is None:
            n_rows, n_tokens = int(n), int(tokens)
            continue
        counts[str(term)] += int(n)
        if blob is not None:
            parts.setdefault(str(term), []).append((int(lo), bytes(blob)))
            open_segments[str(term)] += int(n) < SEGMENT_POSTINGS
    if segments is not None:
        for term in parts:
            segments.seen((table, scope_tag, term), open_segments[term])
    arrays = {term: joined(segments) for term, segments in parts.items()}
    return Postings(n_rows, n_tokens, counts, arrays)


def term_documents(conn: Connection, table: str, scope_tag: str, terms: Sequence[str]) -> dict[str, int]:
    """Documents of one Scope per term, like ``fts5vocab``'s ``doc`` on the Scope's own FTS5 table."""
    query = stored_terms(terms)
    if not query:
        return {}
    marks = ", ".join(["%s"] * len(query))
    rows: Any = conn.query(
        f"SELECT term, SUM(n) FROM fts_segments WHERE fts_table = %s AND term IN ({marks}) AND scope_tag = %s"
        " GROUP BY term",
        (table, *query, scope_tag),
    ).fetchall()
    return {str(term): int(count) for term, count in rows}
