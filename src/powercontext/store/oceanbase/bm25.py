"""FTS5's ``bm25()`` recomputed over a Scope's packed postings (fulltext.py gives the formula and why)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np
import numpy.typing as npt

from powercontext.store.oceanbase.postings import SEGMENT_POSTINGS, TABLES, SegmentCounts, posting_term, unpack

if TYPE_CHECKING:
    from powercontext.store.oceanbase.dialect import Connection

K1: Final = 1.2
B: Final = 0.75

Window = Literal["rank", "newest", "first"]


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

    ``window`` mirrors the SQLite adapter's cut when ranking every match is unaffordable: ``newest``
    ranks only the ``limit`` highest doc ids, ``first`` only the ``window_size`` lowest.
    """
    query = list(dict.fromkeys(posting_term(t) for t in terms if t))
    if not query or limit < 1:
        return []
    inputs = _read_inputs(conn, table, scope_tag, query, segments)
    if not inputs.n_rows or not inputs.arrays:
        return []
    docs = np.unique(np.concatenate([a["doc"] for a in inputs.arrays.values()]))
    if window == "newest":
        docs = docs[-limit:]
    elif window == "first":
        docs = docs[:window_size]
    score = _scores(inputs, query, docs, (*TABLES[table].weights, 0.0)[:2])
    order = np.lexsort((docs, -score))[:limit]
    return [(float(score[i]), int(docs[i])) for i in order]


@dataclass(frozen=True, slots=True)
class _Inputs:
    """Every input of the formula for one Scope and query: documents, tokens, n(t) and the postings per term."""

    n_rows: int
    n_tokens: int
    counts: Counter[str]
    arrays: dict[str, npt.NDArray[Any]]


def _read_inputs(
    conn: Connection, table: str, scope_tag: str, query: list[str], segments: SegmentCounts | None
) -> _Inputs:
    marks = ", ".join(["%s"] * len(query))
    # One round trip for every input of the formula, all of them the Scope's own: its totals row, and its
    # segments of the query terms (their sizes add up to n(t)).
    rows = conn.query(
        "SELECT NULL, docs, tokens, NULL FROM fts_scope_totals WHERE fts_table = %s AND scope_tag = %s UNION ALL"
        " SELECT term, n, 0, postings FROM fts_segments"
        f" WHERE fts_table = %s AND term IN ({marks}) AND scope_tag = %s",
        (table, scope_tag, table, *query, scope_tag),
    ).fetchall()
    n_rows = n_tokens = 0
    counts: Counter[str] = Counter()
    parts: dict[str, list[npt.NDArray[Any]]] = {}
    open_segments: Counter[str] = Counter()
    for term, n, tokens, blob in rows:
        if term is None:
            n_rows, n_tokens = int(n), int(tokens)
            continue
        counts[str(term)] += int(n)
        if blob is not None:
            parts.setdefault(str(term), []).append(unpack(blob))
            open_segments[str(term)] += int(n) < SEGMENT_POSTINGS
    if segments is not None:
        for term in parts:
            segments.seen((table, scope_tag, term), open_segments[term])
    arrays = {term: a[0] if len(a) == 1 else np.concatenate(a) for term, a in parts.items()}
    return _Inputs(n_rows, n_tokens, counts, arrays)


def _scores(
    inputs: _Inputs, query: list[str], docs: npt.NDArray[Any], weights: tuple[float, ...]
) -> npt.NDArray[np.float64]:
    """The BM25 score of each of ``docs`` (FTS5's formula, see fulltext.py)."""
    avgdl = inputs.n_tokens / inputs.n_rows
    size = np.zeros(len(docs), dtype=np.float64)
    located: dict[str, tuple[npt.NDArray[Any], npt.NDArray[Any]]] = {}
    for term, array in inputs.arrays.items():
        at = np.searchsorted(docs, array["doc"])
        inside = at < len(docs)
        inside[inside] = docs[at[inside]] == array["doc"][inside]
        located[term] = (at[inside], array[inside])
        size[at[inside]] = array["len"][inside]
    # Same float64 operations, in the same order, as FTS5's per-phrase loop (fts5_aux.c): a document
    # without the term adds idf·0/… = 0.0, which leaves its sum unchanged.
    norm = K1 * ((1 - B) + (B * size) / avgdl)
    score = np.zeros(len(docs), dtype=np.float64)
    for term in query:
        idf = _idf(inputs.n_rows, inputs.counts.get(term, 0))
        freq = np.zeros(len(docs), dtype=np.float64)
        if term in located:
            at, found = located[term]
            freq[at] = found["tf1"].astype(np.float64) * weights[0] + found["tf2"].astype(np.float64) * weights[1]
        score += idf * ((freq * (K1 + 1.0)) / (freq + norm))
    return score


def _idf(n_rows: int, n_hits: int) -> float:
    idf = math.log((0.5 + n_rows - n_hits) / (0.5 + n_hits))
    return 1e-6 if idf <= 0.0 else idf


def term_documents(conn: Connection, table: str, scope_tag: str, terms: Sequence[str]) -> dict[str, int]:
    """Documents of one Scope per term, like ``fts5vocab``'s ``doc`` on the Scope's own FTS5 table."""
    query = list(dict.fromkeys(posting_term(t) for t in terms if t))
    if not query:
        return {}
    marks = ", ".join(["%s"] * len(query))
    rows: Any = conn.query(
        f"SELECT term, SUM(n) FROM fts_segments WHERE fts_table = %s AND term IN ({marks}) AND scope_tag = %s"
        " GROUP BY term",
        (table, *query, scope_tag),
    ).fetchall()
    return {str(term): int(count) for term, count in rows}
