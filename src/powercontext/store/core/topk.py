"""Exact top-k BM25 that stops early (MaxScore, term at a time), over the postings ``core.bm25`` ranks.

``bm25.rank`` scores every document that holds any query term: at a million memories a query's terms hold
200,000 postings at the median and a million at worst, and scoring them all costs tens of milliseconds. This
returns the same documents, scores and order, scoring far fewer:

- each term is bounded by the weight of its highest frequencies at its shortest length; a term taken becomes two
  plain columns (doc ids ascending, each posting's BM25 weight), a term only looked up is searched where its
  postings lie (``TermSegments``) and weighed only where a looked-up document is found;
- terms are taken best bound first; a document is scored, exactly and once, when the first term it holds is
  taken: then only the terms not yet taken can add to it, so it is looked up in their postings alone, best
  bound first, and dropped as soon as its known weights plus the bounds of the terms not looked up yet stay
  below ``theta``;
- with ``limit`` documents found, ``theta`` is the weakest of them. A document whose own term plus the bounds of
  the terms still to come stays below ``theta`` is never looked up, and once the bounds of every term still to
  come add up to less than ``theta``, no document not yet seen can enter: the search stops.

Scores are summed in query order with the formula of ``bm25.scores``, so they agree to the last bit with the
exhaustive ranking, and ties break by lower doc id as there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from powercontext.store.core.bm25 import POSTING, Postings, TermPostings, Window, column_weight, idf, rank, weight
from powercontext.store.core.term_segments import TermSegments

# Bounds are summed in another order than scores: a relative slack keeps float rounding from pruning a tie.
_SLACK: Final = 1e-9
# Documents of a term scored before the rest of it (at least 4 × limit): enough to set a useful ``theta``.
_FIRST_SLICE: Final = 256
# Below this many postings per pair of query terms ``ranked`` scores every document: measured at 10k and 100k
# memories, the exhaustive ranking is then as fast or faster (``ranked``).
_EXHAUSTIVE_PER_TERM_PAIR: Final = 83


# The most (frequency, length) pairs a one-column term's weights are tabulated for (``_weights``).
_TABLE_CELLS: Final = 1 << 16


def _weights(array: TermPostings, term_idf: float, avgdl: float, weights: tuple[float, float]) -> npt.NDArray[Any]:
    """``weight`` of every posting. With one text column (second weight 0) a weight depends only on the first
    frequency and the length, which take few values: they are computed once per pair and gathered (a third of the
    passes over a million postings), with the same formula and so the same bits."""
    if weights[1] != 0.0 or not len(array):
        return weight(array, term_idf, avgdl, weights)
    tf, size = array["tf1"], array["len"]
    width = int(size.max()) + 1
    cells = (int(tf.max()) + 1) * width
    if cells > _TABLE_CELLS or int(tf.min()) < 0 or int(size.min()) < 0:
        return weight(array, term_idf, avgdl, weights)
    grid = np.zeros(cells, dtype=POSTING)
    grid["tf1"] = np.arange(cells) // width
    grid["len"] = np.arange(cells) % width
    table = weight(grid, term_idf, avgdl, weights)
    gathered: npt.NDArray[np.float64] = table[tf.astype(np.int64) * width + size]
    return gathered


class _Term:
    """One query term: its upper bound (the largest BM25 weight any of its postings can have) and, once it is
    taken, its postings' doc ids in ascending order with their weights. Until then it is only looked up, where
    its postings lie (``TermSegments``): most postings of a query belong to terms that are only looked up
    (~90% at a million memories), and they are never joined, sorted or weighed."""

    __slots__ = ("_all", "_array", "_docs", "_order", "_pair", "avgdl", "bound", "idf")

    def __init__(self, array: TermPostings, term_idf: float, avgdl: float, pair: tuple[float, float]) -> None:
        self._array = array
        self.idf, self.avgdl, self._pair = term_idf, avgdl, pair
        self._docs: npt.NDArray[np.int64] | None = None
        self._order: npt.NDArray[np.intp] | None = None  # record of each sorted position, when not the same
        self._all: npt.NDArray[np.float64] | None = None
        self.bound = _bound(array, term_idf, avgdl, pair)

    @property
    def docs(self) -> npt.NDArray[np.int64]:
        """Every posting's doc id, ascending."""
        return self._sorted()[0]

    @property
    def weights(self) -> npt.NDArray[np.float64]:
        """Every posting's weight, in ``docs`` order."""
        if self._all is None:
            order = self._sorted()[1]
            found = _weights(self._array, self.idf, self.avgdl, self._pair)
            self._all = found if order is None else found[order]
        return self._all

    def _sorted(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.intp] | None]:
        """The ids ascending, and each one's position in the postings when that is not the same."""
        if self._docs is None:
            # A plain id column: permuting or slicing 20-byte records costs ~10x a column.
            docs = np.ascontiguousarray(self._array["doc"], dtype=np.int64)
            if len(docs) > 1 and not bool(np.all(docs[1:] > docs[:-1])):
                # Segments overlap (a revised document's new posting, segments merged across batches).
                self._order = np.argsort(docs, kind="stable")
                docs = docs[self._order]
            self._docs = docs
        return self._docs, self._order

    def lookup(self, docs: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """The term's weight in each of ``docs`` (ascending), 0 where it does not occur: the same bits as its
        ``weights`` (one formula, element by element)."""
        array = self._array
        if self._docs is None and isinstance(array, TermSegments):
            return array.lookup(docs, self.idf, self.avgdl, self._pair)
        hit, at = _member(docs, self.docs)
        found = np.zeros(len(docs), dtype=np.float64)
        if self._all is not None:
            found[hit] = self._all[at[hit]]
            return found
        records = at[hit] if self._order is None else self._order[at[hit]]
        tf1, tf2, size = array["tf1"][records], array["tf2"][records], array["len"][records]
        found[hit] = column_weight(tf1, tf2, size, self.idf, self.avgdl, self._pair)
        return found


def _bound(array: TermPostings, term_idf: float, avgdl: float, pair: tuple[float, float]) -> float:
    """An upper bound of the term's weights: the weight of its highest frequencies at its shortest length (a
    weight grows with a frequency and shrinks with the length; segments keep the three in their headers). At a
    million memories it is within 1.5% of the largest weight at the median (19% at worst)."""
    if isinstance(array, TermSegments):
        high_tf1, high_tf2, shortest = array.maxima()
    else:
        high_tf1, high_tf2, shortest = int(array["tf1"].max()), int(array["tf2"].max()), int(array["len"].min())
    corner = np.zeros(1, dtype=POSTING)
    corner["tf1"], corner["tf2"], corner["len"] = high_tf1, high_tf2 if pair[1] != 0.0 else 0, shortest
    return float(weight(corner, term_idf, avgdl, pair)[0])


def _member(docs: npt.NDArray[Any], sorted_docs: npt.NDArray[Any]) -> tuple[npt.NDArray[np.bool_], npt.NDArray[Any]]:
    """Which of ``docs`` are in ``sorted_docs``, and where."""
    at = np.searchsorted(sorted_docs, docs)
    inside = at < len(sorted_docs)
    hit = np.zeros(len(docs), dtype=bool)
    hit[inside] = sorted_docs[at[inside]] == docs[inside]
    return hit, at


class _Best:
    """The best ``limit`` (score, doc) found so far, and ``theta``, the weakest of them once there are ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.scores = np.empty(0, dtype=np.float64)
        self.docs = np.empty(0, dtype=np.int64)
        self.theta = -np.inf
        self.scored = 0

    @property
    def full(self) -> bool:
        return len(self.docs) >= self.limit

    def offer(self, scores: npt.NDArray[np.float64], docs: npt.NDArray[np.int64], looked_up: int) -> None:
        """Keep the best ``limit`` of the kept and ``docs`` (``looked_up`` documents were scored to find them)."""
        self.scored += looked_up
        if self.full:  # below the weakest kept no document enters (a tie may: a lower doc id wins it)
            entering = scores >= self.theta
            scores, docs = scores[entering], docs[entering]
        all_scores = np.concatenate([self.scores, scores])
        all_docs = np.concatenate([self.docs, docs])
        keep = np.lexsort((all_docs, -all_scores))[: self.limit]
        self.scores, self.docs = all_scores[keep], all_docs[keep]
        if self.full:
            self.theta = float(self.scores[-1])


def _score(
    chosen: npt.NDArray[np.intp],
    term: str,
    taken: Sequence[str],
    later: Sequence[str],
    query: Sequence[str],
    terms: dict[str, _Term],
    best: _Best,
) -> None:
    """Score the postings ``chosen`` (ascending positions, so their doc ids ascend as every lookup needs) of
    ``term`` whose documents no taken term held, and offer them to ``best``."""
    docs = terms[term].docs[chosen]
    own = terms[term].weights[chosen]
    for other in taken:  # their documents were scored when that term was taken
        fresh = ~_member(docs, terms[other].docs)[0]
        docs, own = docs[fresh], own[fresh]
    if not len(docs):
        return
    looked_up = len(docs)
    parts = {term: own}
    known = own
    for j, other in enumerate(later):
        part = terms[other].lookup(docs)
        parts[other] = part
        if best.full and j + 1 < len(later):
            # Known parts plus the bounds of the terms not looked up yet: a document that cannot reach ``theta``
            # is looked up no further (MaxScore's non-essential terms).
            known = known + part
            alive = (known + sum(terms[t].bound for t in later[j + 1 :])) * (1 + _SLACK) >= best.theta
            if not bool(np.all(alive)):
                docs, known = docs[alive], known[alive]
                parts = {t: p[alive] for t, p in parts.items()}
    score = np.zeros(len(docs), dtype=np.float64)
    for t in query:  # query order, as bm25.scores sums
        if t in parts:
            score += parts[t]
    best.offer(score, docs, looked_up)


def top_k(
    postings: Postings, query: Sequence[str], limit: int, weights: Sequence[float]
) -> tuple[list[tuple[float, int]], int]:
    """(score, doc id) of the ``limit`` best documents, best first (ties: lower doc id first), exactly as
    ``bm25.rank``; and how many documents were scored (the work the bounds left)."""
    if limit < 1 or not postings.n_rows:
        return [], 0
    query = [t for t in dict.fromkeys(query) if t in postings.arrays and len(postings.arrays[t])]
    if not query:
        return [], 0
    pair = (float(weights[0]), float(weights[1]) if len(weights) > 1 else 0.0)
    avgdl = postings.n_tokens / postings.n_rows
    terms = {t: _Term(postings.arrays[t], idf(postings.n_rows, postings.counts.get(t, 0)), avgdl, pair) for t in query}
    order = sorted(query, key=lambda t: -terms[t].bound)
    best = _Best(limit)
    for i, term in enumerate(order):
        taken, later = order[:i], order[i + 1 :]
        rest = sum(terms[t].bound for t in later)
        if best.full and (rest + terms[term].bound) * (1 + _SLACK) < best.theta:
            break  # no document not yet seen can reach the weakest of the best
        own = terms[term].weights
        pending = np.arange(len(own))
        cut = max(4 * limit, _FIRST_SLICE)
        if not best.full and len(own) > cut:
            # The best own weights first: they set a ``theta`` that prunes the rest of the term.
            first = np.sort(np.argpartition(-own, cut)[:cut])
            _score(first, term, taken, later, query, terms, best)
            spared = np.ones(len(own), dtype=bool)
            spared[first] = False
            pending = pending[spared]
        if best.full:
            pending = pending[(own[pending] + rest) * (1 + _SLACK) >= best.theta]
        if len(pending):
            _score(pending, term, taken, later, query, terms, best)
    return [(float(s), int(d)) for s, d in zip(best.scores, best.docs, strict=True)], best.scored


def ranked(
    postings: Postings,
    query: Sequence[str],
    limit: int,
    weights: Sequence[float],
    window: Window = "rank",
    window_size: int = 0,
) -> list[tuple[float, int]]:
    """(score, doc id) best first: the exact early-stopping top-k, or under a ``window`` cut ``bm25.rank``.

    Few postings over many terms (a memory's own text as the query, in a small Scope: the supersession hint of
    every create) rank exhaustively: ``bm25.rank`` costs ~0.12 µs per posting in a few vectorised passes, the
    top-k ~10 µs per pair of terms in per-term lookups. Both give the same documents, scores and order."""
    if window == "rank":
        distinct = {t for t in query if t in postings.arrays}
        if sum(len(postings.arrays[t]) for t in distinct) < _EXHAUSTIVE_PER_TERM_PAIR * len(distinct) ** 2:
            return rank(postings, query, limit, weights)
        return top_k(postings, query, limit, weights)[0]
    return rank(postings, query, limit, weights, window, window_size)
