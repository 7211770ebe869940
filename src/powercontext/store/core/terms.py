"""The Atomic Memory full-text bookkeeping both stores share: per-Scope term document counts
(``fts_term_docs``) and the query terms a search can afford to rank."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from powercontext.store.core.family_rows import scope_tag
from powercontext.text.tokenize import MAX_QUERY_TERMS
from powercontext.text.tokenize import terms as index_terms

if TYPE_CHECKING:
    from powercontext.store.core.fulltext import FullTextIndex

MEMORY_INDEX: Final = "atomic_memory_fts"

# A reserved term (the tokenizer never yields it) whose count is the Scope's number of active heads.
ACTIVE_DOCS: Final = ""
# The postings one Atomic Memory search may read (~40 MB; the median bench query at a million memories reads
# ~220,000, the largest ~1,000,000): a cost bound, not a ranking rule. Every kept term is ranked in full by the
# exact top-k (core/topk.py); only a query whose terms together hold more than this loses its commonest ones.
POSTING_BUDGET: Final = 2_000_000
MAX_RANKED_TERMS: Final = MAX_QUERY_TERMS  # the most query terms one search ranks


class SearchShare(NamedTuple):
    """What one Atomic Memory full-text search may rank: postings and query terms."""

    postings: int = POSTING_BUDGET
    terms: int = MAX_RANKED_TERMS


# One search's share of its prepare's work (recall/fanout.py); a search outside a prepare has the whole budget.
_WHOLE_BUDGET: Final = SearchShare()
_share: ContextVar[SearchShare] = ContextVar("search_share", default=_WHOLE_BUDGET)


@contextmanager
def search_share(share: SearchShare) -> Iterator[None]:
    """Every Atomic Memory full-text search in this context ranks at most ``share.postings`` postings of at most
    ``share.terms`` terms, the rarest first (the rarest term is always kept)."""
    token = _share.set(share)
    try:
        yield
    finally:
        _share.reset(token)


def ranked_terms(conn: Any, scope_id: str, terms: Sequence[str]) -> list[str]:
    """The query terms the Scope's memories hold, rarest first, at most ``MAX_RANKED_TERMS``.

    Every kept term is ranked: the top-k BM25 (core/topk.py) scores only the memories that can still make the
    cut, so a term in most memories still adds its (small, positive) IDF. Terms are kept rarest first while
    their postings fit ``POSTING_BUDGET`` (or the ``search_share`` in force, which also caps how many terms are
    kept); the rarest is always kept. Terms found nowhere are dropped: a query of only those reads nothing.
    """
    distinct = list(dict.fromkeys(t for t in terms if t))
    if not distinct:
        return []
    counts: dict[str, int] = {}
    for start in range(0, len(distinct), 500):
        part = distinct[start : start + 500]
        marks = ",".join("?" * len(part))
        counts.update(
            conn.execute(
                f"SELECT term, docs FROM fts_term_docs WHERE scope_id = ? AND term IN ({marks})", [scope_id, *part]
            )
        )
    budget, most_terms = _share.get()
    kept: list[str] = []
    total = 0
    for term in sorted((t for t in distinct if t in counts), key=lambda t: counts[t]):
        if kept and (total + counts[term] > budget or len(kept) >= most_terms):
            break
        kept.append(term)
        total += counts[term]
    return kept


def term_statistics(conn: Any, scope_id: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
    """The Scope's active Atomic Memory heads, and how many of them hold each of ``terms`` (absent: not listed)."""
    distinct = list(dict.fromkeys(t for t in terms if t))
    marks = ",".join("?" * (len(distinct) + 1))
    counts = dict(
        conn.execute(
            f"SELECT term, docs FROM fts_term_docs WHERE scope_id = ? AND term IN ({marks})",
            [scope_id, ACTIVE_DOCS, *distinct],
        )
    )
    return int(counts.pop(ACTIVE_DOCS, 0)), {str(t): int(n) for t, n in counts.items()}


class TermCounts:
    """The ``fts_term_docs`` changes of one write transaction, applied once by ``flush``; the index writes
    themselves go through the store's ``FullTextIndex``."""

    def __init__(self, scope_id: str, fulltext: FullTextIndex) -> None:
        self.scope_id = scope_id
        self.deltas: Counter[str] = Counter()
        self._fulltext = fulltext
        self._tag = scope_tag(scope_id)

    def index(self, conn: Any, rowid: int, text: str) -> None:
        """Make one active head searchable."""
        terms = index_terms(text)
        self._fulltext.add(conn, MEMORY_INDEX, rowid, self._tag, (" ".join(terms),))
        self.deltas.update({ACTIVE_DOCS, *terms})

    def unindex(self, conn: Any, rowid: int, text: str) -> None:
        """Remove one head from search; ``text`` is the body it was indexed with."""
        self._fulltext.remove(conn, MEMORY_INDEX, rowid, self._tag)
        self.deltas.subtract({ACTIVE_DOCS, *index_terms(text)})

    def flush(self, conn: Any) -> None:
        gained = [(self.scope_id, t, d) for t, d in self.deltas.items() if d > 0]
        lost = [(d, self.scope_id, t) for t, d in self.deltas.items() if d < 0]
        conn.executemany(
            "INSERT INTO fts_term_docs (scope_id, term, docs) VALUES (?, ?, ?)"
            " ON CONFLICT (scope_id, term) DO UPDATE SET docs = docs + excluded.docs",
            gained,
        )
        # Rows that reach zero go first, so no row ever holds a zero count.
        conn.executemany("DELETE FROM fts_term_docs WHERE docs + ? = 0 AND scope_id = ? AND term = ?", lost)
        conn.executemany("UPDATE fts_term_docs SET docs = docs + ? WHERE scope_id = ? AND term = ?", lost)
        self.deltas.clear()
