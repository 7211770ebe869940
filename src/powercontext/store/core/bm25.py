"""BM25 over one Scope's postings: the single scoring function of both stores.

Receipts must select the same memories, in the same order, with the same scores, on SQLite and OceanBase,
so neither store ranks with its database's own relevance function. Each reads the same inputs from its own
tables (the same packed postings: store/sqlite/packed.py, store/oceanbase/bm25.py) and hands them to ``rank``
or to the early-stopping top-k (core/topk.py):

    idf(t)   = ln(1 + (N - n(t) + 0.5) / (n(t) + 0.5))
    score(d) = Σ_t idf(t) · f·(k1 + 1) / (f + k1·(1 - b + b·|d| / avgdl)),  k1 = 1.2, b = 0.75

``N`` and the token total count every document ever added to the Scope's index (as FTS5's contentless-delete
tables keep them), ``n(t)`` the documents holding ``t`` now, ``f`` the column-weighted frequency and ``|d|`` the
document's tokens including its scope tag.

The IDF is Lucene's form, not FTS5's ``ln((N - n + 0.5) / (n + 0.5))`` clamped to 1e-6: with statistics per
Scope, a term in half or more of one Scope's memories (a person's name in a chat log, a service's name in its
own notes) got an IDF of ~0 under FTS5's form and stopped discriminating at all; Lucene's form stays positive and
still orders terms by rarity (docs/evaluation.md has the measurements).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, Union, overload

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from powercontext.store.core.term_segments import TermSegments

K1: Final = 1.2
B: Final = 0.75

# One posting: doc id, term frequency in the first and second text column, document tokens.
POSTING: Final = np.dtype([("doc", "<i8"), ("tf1", "<i4"), ("tf2", "<i4"), ("len", "<i4")])
FIELDS: Final = ("doc", "tf1", "tf2", "len")


class Columns:
    """One term's postings as a column per ``POSTING`` field (what a search joins from a term's segments): read
    as ``columns["doc"]``, like the records, and selected by a mask or positions as they are."""

    __slots__ = ("_fields",)

    def __init__(
        self, doc: npt.NDArray[Any], tf1: npt.NDArray[Any], tf2: npt.NDArray[Any], tokens: npt.NDArray[Any]
    ) -> None:
        self._fields = {"doc": doc, "tf1": tf1, "tf2": tf2, "len": tokens}

    def __len__(self) -> int:
        return len(self._fields["doc"])

    @overload
    def __getitem__(self, key: str) -> npt.NDArray[Any]: ...
    @overload
    def __getitem__(self, key: npt.NDArray[Any]) -> Columns: ...
    def __getitem__(self, key: str | npt.NDArray[Any]) -> npt.NDArray[Any] | Columns:
        if isinstance(key, str):
            return self._fields[key]
        return Columns(*(column[key] for column in self._fields.values()))


# A term's postings: ``POSTING`` records, the same as columns, or its segments as read (core/term_segments.py).
TermPostings = Union[npt.NDArray[Any], Columns, "TermSegments"]  # Union: "|" takes no forward reference

# ``rank`` ranks every matching document; ``first`` only the ``window_size`` lowest doc ids (the cut code search
# takes when ranking every match is unaffordable).
Window = Literal["rank", "first"]


@dataclass(frozen=True, slots=True)
class Postings:
    """Every input of the formula for one Scope's index and one query."""

    n_rows: int  # N: documents ever added to the Scope's index
    n_tokens: int  # their tokens, scope tags included
    counts: Mapping[str, int]  # n(t): documents holding the term in a searched column
    arrays: Mapping[str, TermPostings]


def idf(n_rows: int, n_hits: int) -> float:
    """Lucene's inverse document frequency: positive for every term, larger for rarer ones."""
    return math.log(1.0 + (n_rows - n_hits + 0.5) / (n_hits + 0.5))


def rank(
    postings: Postings,
    query: Sequence[str],
    limit: int,
    weights: Sequence[float],
    window: Window = "rank",
    window_size: int = 0,
) -> list[tuple[float, int]]:
    """(score, doc id) of the documents matching any query term, best first (ties: lower doc id first).

    ``weights`` are the two text columns' weights (the second is ignored for a one-column index).
    """
    if limit < 1 or not postings.n_rows or not postings.arrays:
        return []
    docs = np.unique(np.concatenate([a["doc"] for a in postings.arrays.values()]))
    if window == "first":
        docs = docs[:window_size]
    pair = (float(weights[0]), float(weights[1]) if len(weights) > 1 else 0.0)
    score = scores(postings, query, docs, pair)
    order = np.lexsort((docs, -score))[:limit]
    return [(float(score[i]), int(docs[i])) for i in order]


def holders(postings: Postings, limit: int) -> list[int]:
    """Ids of the documents holding the read terms, by the inverse document frequency the terms they hold add
    up to (rarer terms first), then the highest id (the latest written) first; at most ``limit``. No frequency or
    length: for reads that want a few rare terms' holders, not a BM25 ranking."""
    if limit < 1 or not postings.arrays:
        return []
    docs_of = [a["doc"] for a in postings.arrays.values()]  # a document holds a term once
    rarity = [idf(postings.n_rows, postings.counts[term]) for term in postings.arrays]
    mass = np.repeat(rarity, [len(d) for d in docs_of])
    docs, at = np.unique(np.concatenate(docs_of), return_inverse=True)
    held = np.bincount(at, weights=mass, minlength=len(docs))
    order = np.lexsort((-docs, -held))[:limit]
    return [int(doc) for doc in docs[order]]


def weight(found: TermPostings, term_idf: float, avgdl: float, weights: tuple[float, float]) -> npt.NDArray[np.float64]:
    """The term's BM25 weight in each of ``found`` (its postings), the formula's summand."""
    return column_weight(found["tf1"], found["tf2"], found["len"], term_idf, avgdl, weights)


def column_weight(
    tf1: npt.NDArray[Any],
    tf2: npt.NDArray[Any],
    tokens: npt.NDArray[Any],
    term_idf: float,
    avgdl: float,
    weights: tuple[float, float],
) -> npt.NDArray[np.float64]:
    """``weight`` over the postings' columns: each frequency, the other, the document's tokens."""
    freq = tf1.astype(np.float64) * weights[0] + tf2.astype(np.float64) * weights[1]
    size = tokens.astype(np.float64)
    norm = K1 * ((1 - B) + (B * size) / avgdl)
    result: npt.NDArray[np.float64] = term_idf * ((freq * (K1 + 1.0)) / (freq + norm))
    return result


def scores(
    postings: Postings, query: Sequence[str], docs: npt.NDArray[Any], weights: tuple[float, float]
) -> npt.NDArray[np.float64]:
    """The BM25 score of each of ``docs`` (sorted, distinct doc ids): each query term's weights, in query order,
    added where the term occurs (elsewhere a term adds exactly 0, so it is skipped there)."""
    avgdl = postings.n_tokens / postings.n_rows
    score = np.zeros(len(docs), dtype=np.float64)
    for term in dict.fromkeys(query):
        array = postings.arrays.get(term)
        if array is None or not len(array):
            continue  # a term no document holds adds nothing
        at = np.searchsorted(docs, array["doc"])
        inside = at < len(docs)
        inside[inside] = docs[at[inside]] == array["doc"][inside]
        found = array if bool(inside.all()) else array[inside]
        score[at[inside]] += weight(found, idf(postings.n_rows, postings.counts.get(term, 0)), avgdl, weights)
    return score
