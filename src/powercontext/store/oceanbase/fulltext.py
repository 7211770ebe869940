"""Full-text postings and BM25 ranking identical to SQLite FTS5's ``bm25()``.

Receipts must select the same memories, in the same order, on every backend, so the ranking cannot
be the database's own relevance function: OceanBase's FULLTEXT parsers also drop one-character terms
(measured: ``a``, ``1`` and single CJK characters are never found) and split differently from the
Python tokenizer that produced the terms. Instead each indexed document keeps its exact term
postings (term frequency per column) and token count, and ranking recomputes FTS5's formula:

    idf(t)   = ln((N - n(t) + 0.5) / (n(t) + 0.5)), clamped to 1e-6 when ≤ 0
    score(d) = Σ_t idf(t) · f·(k1 + 1) / (f + k1·(1 - b + b·|d| / avgdl)),  k1 = 1.2, b = 0.75

with ``N``, ``n(t)`` and ``avgdl`` over the whole index (every Scope, as FTS5 computes them; ``N`` and
the token total count every document ever added, as a contentless-delete FTS5 table does),
``f`` the column-weighted frequency and ``|d|`` the document's tokens including its scope tag.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, cast

if TYPE_CHECKING:
    from powercontext.store.oceanbase.dialect import Connection

K1: Final = 1.2
B: Final = 0.75
MAX_TERM_CHARS: Final = 200
# Extra SQL-ranked candidates re-scored exactly, so rounding in the database never changes the top ``limit``.
CANDIDATE_MARGIN: Final = 32

Window = Literal["rank", "newest", "first"]


@dataclass(frozen=True, slots=True)
class FtsTable:
    """One FTS5 table of the SQLite schema: its text columns (after ``scope_tag``) and BM25 weights."""

    name: str
    columns: tuple[str, ...]
    weights: tuple[float, ...]


TABLES: Final = {
    t.name: t
    for t in (
        FtsTable("atomic_memory_fts", ("terms",), (1.0,)),
        FtsTable("topic_memory_fts", ("title", "body"), (2.0, 1.0)),
        FtsTable("experience_fts", ("terms",), (1.0,)),
        FtsTable("code_fts", ("path_terms", "terms"), (2.0, 1.0)),
    )
}


def posting_term(token: str) -> str:
    """The stored form of a term: case-folded like FTS5's unicode61; a very long one is shortened losslessly
    enough (prefix + digest) to fit the key column."""
    folded = token.lower()
    if len(folded) <= MAX_TERM_CHARS:
        return folded
    return folded[: MAX_TERM_CHARS - 41] + "#" + hashlib.sha1(folded.encode("utf-8")).hexdigest()


class FtsWriter:
    """Keeps ``fts_docs``, ``fts_postings`` and ``fts_totals`` in step with the FTS writes of the shared code.

    Additions are buffered and written by ``flush`` just before the transaction commits: three multi-row
    statements instead of three statements per document (measured on seekdb: re-updating the one
    ``fts_totals`` row 500 times in a transaction cost 4.5 ms each). Only the store's single writer
    session calls it, under the write lock.
    """

    def __init__(self) -> None:
        self._docs: dict[tuple[str, int], tuple[str, int]] = {}  # (table, doc) -> (scope tag, tokens)
        self._postings: dict[tuple[str, int], list[tuple[str, int, int]]] = {}  # -> (term, tf1, tf2)
        self._totals: Counter[tuple[str, str]] = Counter()  # (table, "docs" | "tokens")

    def add(self, conn: Connection, table: str, doc_id: int, scope_tag: str, texts: Sequence[str]) -> None:
        spec = TABLES[table]
        per_column = [Counter(posting_term(t) for t in text.split()) for text in texts]
        tokens = 1 + sum(sum(c.values()) for c in per_column)  # the scope tag is one token
        postings = []
        for term in set().union(*per_column):
            tf = [c.get(term, 0) for c in per_column] + [0] * (2 - len(spec.columns))
            postings.append((term, tf[0], tf[1]))
        self._docs[(table, doc_id)] = (scope_tag, tokens)
        self._postings[(table, doc_id)] = postings
        self._totals[(table, "docs")] += 1
        self._totals[(table, "tokens")] += tokens

    def remove(self, conn: Connection, table: str, doc_id: int) -> None:
        if self._docs.pop((table, doc_id), None) is not None:
            # Added earlier in this transaction (after any stored row was deleted): never written.
            del self._postings[(table, doc_id)]
            return
        conn.query("DELETE FROM fts_postings WHERE fts_table = %s AND doc_id = %s", (table, doc_id))
        conn.query("DELETE FROM fts_docs WHERE fts_table = %s AND doc_id = %s", (table, doc_id))
        # fts_totals is left alone on purpose: an FTS5 table with contentless_delete=1 never lowers its
        # row count or token totals on DELETE (measured: 3 rows, delete one, the averages record still
        # says 3), and BM25 must divide by the same numbers here.

    def flush(self, conn: Connection) -> None:
        """Write the buffered additions (inside the transaction, before COMMIT)."""
        if self._docs:
            docs = [(table, doc, tag, tokens) for (table, doc), (tag, tokens) in self._docs.items()]
            postings = [
                (table, term, doc, tf1, tf2)
                for (table, doc), rows in self._postings.items()
                for term, tf1, tf2 in rows
            ]
            with conn.raw.cursor() as cur:
                cur.executemany(
                    "INSERT INTO fts_docs (fts_table, doc_id, scope_tag, ntokens) VALUES (%s, %s, %s, %s)", docs
                )
                if postings:
                    cur.executemany(
                        "INSERT INTO fts_postings (fts_table, term, doc_id, tf1, tf2) VALUES (%s, %s, %s, %s, %s)",
                        postings,
                    )
        for table in sorted({table for table, _ in self._totals}):
            conn.query(
                "INSERT INTO fts_totals (fts_table, docs, tokens) VALUES (%s, %s, %s)"
                " ON DUPLICATE KEY UPDATE docs = docs + VALUES(docs), tokens = tokens + VALUES(tokens)",
                (table, self._totals[(table, "docs")], self._totals[(table, "tokens")]),
            )
        self.discard()

    def discard(self) -> None:
        """Forget the buffered additions (the transaction rolled back, or they were flushed)."""
        self._docs.clear()
        self._postings.clear()
        self._totals.clear()


def search(
    conn: Connection,
    table: str,
    scope_tag: str,
    terms: Sequence[str],
    limit: int,
    window: Window = "rank",
    window_size: int = 0,
) -> list[tuple[float, int]]:
    """(score, doc_id) of the Scope's documents matching any term, best first (ties: lower doc_id first).

    ``window`` mirrors the SQLite adapter's cut when ranking every match is unaffordable: ``newest``
    ranks only the ``limit`` highest doc ids, ``first`` only the ``window_size`` lowest.
    """
    spec = TABLES[table]
    query = list(dict.fromkeys(posting_term(t) for t in terms if t))
    if not query or limit < 1:
        return []
    totals = conn.query("SELECT docs, tokens FROM fts_totals WHERE fts_table = %s", (table,)).fetchone()
    if totals is None or not totals[0]:
        return []
    n_rows, n_tokens = int(totals[0]), int(totals[1])
    marks = ", ".join(["%s"] * len(query))
    counts = dict(
        conn.query(
            f"SELECT term, COUNT(*) FROM fts_postings WHERE fts_table = %s AND term IN ({marks}) GROUP BY term",
            (table, *query),
        ).fetchall()
    )
    idf = [_idf(n_rows, int(counts.get(term, 0))) for term in query]
    avgdl = n_tokens / n_rows
    restrict, extra = "", cast(tuple[int, ...], ())
    if window == "rank":
        # The database ranks (in DOUBLE arithmetic, summed in its own order) and returns a few more
        # than asked; those are re-scored exactly below. Shipping every posting of a common term to
        # Python instead cost ~28 ms of a 50 ms search at 10,000 memories.
        top = _top_candidates(conn, spec, scope_tag, query, idf, avgdl, limit + CANDIDATE_MARGIN)
        if not top:
            return []
        restrict, extra = f" AND p.doc_id IN ({', '.join(['%s'] * len(top))})", tuple(top)
    hits: dict[int, dict[str, tuple[int, int]]] = {}
    sizes: dict[int, int] = {}
    found = conn.query(
        "SELECT p.doc_id, p.term, p.tf1, p.tf2, d.ntokens FROM fts_postings p"
        " JOIN fts_docs d ON d.fts_table = p.fts_table AND d.doc_id = p.doc_id"
        f" WHERE p.fts_table = %s AND p.term IN ({marks}) AND d.scope_tag = %s{restrict}",
        (table, *query, scope_tag, *extra),
    ).fetchall()
    for doc_id, term, tf1, tf2, ntokens in found:
        hits.setdefault(doc_id, {})[term] = (tf1, tf2)
        sizes[doc_id] = ntokens
    if not hits:
        return []
    docs = sorted(hits)
    if window == "newest":
        docs = docs[-limit:]
    elif window == "first":
        docs = docs[:window_size]
    scored = []
    for doc_id in docs:
        score = 0.0
        postings = hits[doc_id]
        size = float(sizes[doc_id])
        for i, term in enumerate(query):
            tf = postings.get(term)
            freq = 0.0 if tf is None else _weighted(spec.weights, tf)
            # The grouping is FTS5's own (fts5_aux.c), so scores agree to the last bit.
            score += idf[i] * ((freq * (K1 + 1.0)) / (freq + K1 * (1 - B + B * size / avgdl)))
        scored.append((score, doc_id))
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    return scored[:limit]


def _top_candidates(
    conn: Connection,
    spec: FtsTable,
    scope_tag: str,
    query: list[str],
    idf: list[float],
    avgdl: float,
    limit: int,
) -> list[int]:
    """Doc ids of the best ``limit`` matches by BM25 computed in SQL (close to, not bit-equal with, FTS5's)."""
    weights = (*spec.weights, 0.0)[:2]
    cases = " ".join("WHEN %s THEN %s * 1E0" for _ in query)
    freq = "(p.tf1 * %s * 1E0 + p.tf2 * %s * 1E0)"
    rows = conn.query(
        f"SELECT p.doc_id, SUM((CASE p.term {cases} END)"
        f" * (({freq} * %s) / ({freq} + %s * (%s + %s * d.ntokens / %s)))) AS score"
        " FROM fts_postings p JOIN fts_docs d ON d.fts_table = p.fts_table AND d.doc_id = p.doc_id"
        f" WHERE p.fts_table = %s AND p.term IN ({', '.join(['%s'] * len(query))}) AND d.scope_tag = %s"
        " GROUP BY p.doc_id ORDER BY score DESC, p.doc_id LIMIT %s",
        (
            *(v for pair in zip(query, idf, strict=True) for v in pair),
            *weights,
            K1 + 1.0,
            *weights,
            K1,
            1 - B,
            B,
            avgdl,
            spec.name,
            *query,
            scope_tag,
            limit,
        ),
    ).fetchall()
    return [int(row[0]) for row in rows]


def _weighted(weights: tuple[float, ...], tf: tuple[int, int]) -> float:
    freq = 0.0
    for weight, count in zip(weights, tf, strict=False):
        # FTS5 adds the column weight once per phrase instance.
        for _ in range(count):
            freq += weight
    return freq


def _idf(n_rows: int, n_hits: int) -> float:
    idf = math.log((0.5 + n_rows - n_hits) / (0.5 + n_hits))
    return 1e-6 if idf <= 0.0 else idf


def term_documents(conn: Connection, table: str, terms: Sequence[str]) -> dict[str, int]:
    """Documents per term over the whole index (every Scope), like ``fts5vocab``'s ``doc``."""
    query = list(dict.fromkeys(posting_term(t) for t in terms if t))
    if not query:
        return {}
    marks = ", ".join(["%s"] * len(query))
    rows: Any = conn.query(
        f"SELECT term, COUNT(*) FROM fts_postings WHERE fts_table = %s AND term IN ({marks}) GROUP BY term",
        (table, *query),
    ).fetchall()
    return {str(term): int(count) for term, count in rows}
