"""Exact top-k BM25 that stops early (MaxScore, term at a time), over the postings ``core.bm25`` ranks.

``bm25.rank`` scores every document that holds any query term: at a million memories a query's terms hold
200,000 postings at the median and a million at worst, and scoring them all costs tens of milliseconds. This
returns the same documents, scores and order, scoring far fewer:

- each term's upper bound is its IDF times the largest term weight any of its postings can reach (its largest
  frequency in the shortest document that holds it);
- terms are taken best bound first; a document is scored, exactly and once, when the first term it holds is
  taken: then only the terms not yet taken can add to it, so it is looked up in their postings alone;
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

from powercontext.store.core.bm25 import K1, B, Postings, Window, idf, rank

# Bounds are summed in another order than scores: a relative slack keeps float rounding from pruning a tie.
_SLACK: Final = 1e-9
# Documents of a term scored before the rest of it (at least 4 × limit): enough to set a useful ``theta``.
_FIRST_SLICE: Final = 256


def weight(
    found: npt.NDArray[Any], term_idf: float, avgdl: float, weights: tuple[float, float]
) -> npt.NDArray[np.float64]:
    """The term's BM25 weight in each of ``found`` (its postings), as ``bm25.scores`` computes it."""
    freq = found["tf1"].astype(np.float64) * weights[0] + found["tf2"].astype(np.float64) * weights[1]
    size = found["len"].astype(np.float64)
    norm = K1 * ((1 - B) + (B * size) / avgdl)
    result: npt.NDArray[np.float64] = term_idf * ((freq * (K1 + 1.0)) / (freq + norm))
    return result


def _bound(array: npt.NDArray[Any], term_idf: float, avgdl: float, weights: tuple[float, float]) -> float:
    """No posting of the term weighs more: the weight of its largest frequency at its shortest length."""
    freq = float(np.max(array["tf1"].astype(np.float64) * weights[0] + array["tf2"].astype(np.float64) * weights[1]))
    norm = K1 * ((1 - B) + (B * float(np.min(array["len"]))) / avgdl)
    return term_idf * ((freq * (K1 + 1.0)) / (freq + norm))


def _in_doc_order(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """The postings sorted by doc id (a term's segments arrive in write order; a revised document's new posting
    sits in a newer segment than higher doc ids)."""
    docs = array["doc"]
    if len(docs) < 2 or bool(np.all(docs[1:] > docs[:-1])):
        return array
    return array[np.argsort(docs, kind="stable")]


def _member(docs: npt.NDArray[Any], sorted_docs: npt.NDArray[Any]) -> tuple[npt.NDArray[np.bool_], npt.NDArray[Any]]:
    """Which of ``docs`` are in ``sorted_docs``, and where."""
    at = np.searchsorted(sorted_docs, docs)
    inside = at < len(sorted_docs)
    hit = np.zeros(len(docs), dtype=bool)
    hit[inside] = sorted_docs[at[inside]] == docs[inside]
    return hit, at


def _exact(
    docs: npt.NDArray[Any],
    term: str,
    own: npt.NDArray[np.float64],
    later: Sequence[str],
    terms: Sequence[str],
    arrays: dict[str, npt.NDArray[Any]],
    idfs: dict[str, float],
    avgdl: float,
    pair: tuple[float, float],
) -> npt.NDArray[np.float64]:
    """The full scores of ``docs``, whose first taken term is ``term``: only the ``later`` terms can add to them."""
    parts = {term: own}
    for other in later:
        hit, at = _member(docs, arrays[other]["doc"])
        part = np.zeros(len(docs), dtype=np.float64)
        part[hit] = weight(arrays[other][at[hit]], idfs[other], avgdl, pair)
        parts[other] = part
    score = np.zeros(len(docs), dtype=np.float64)
    for t in terms:  # query order, as bm25.scores sums
        if t in parts:
            score += parts[t]
    return score


def top_k(
    postings: Postings, query: Sequence[str], limit: int, weights: Sequence[float]
) -> tuple[list[tuple[float, int]], int]:
    """(score, doc id) of the ``limit`` best documents, best first (ties: lower doc id first), exactly as
    ``bm25.rank``; and how many documents were scored (the work the bounds left)."""
    if limit < 1 or not postings.n_rows:
        return [], 0
    terms = [t for t in dict.fromkeys(query) if t in postings.arrays and len(postings.arrays[t])]
    if not terms:
        return [], 0
    pair = (float(weights[0]), float(weights[1]) if len(weights) > 1 else 0.0)
    avgdl = postings.n_tokens / postings.n_rows
    arrays = {t: _in_doc_order(postings.arrays[t]) for t in terms}
    idfs = {t: idf(postings.n_rows, postings.counts.get(t, 0)) for t in terms}
    bounds = {t: _bound(arrays[t], idfs[t], avgdl, pair) for t in terms}
    order = sorted(terms, key=lambda t: -bounds[t])
    best_scores = np.empty(0, dtype=np.float64)
    best_docs = np.empty(0, dtype=np.int64)
    theta = -np.inf
    scored = 0
    for i, term in enumerate(order):
        later = order[i + 1 :]
        rest = sum(bounds[t] for t in later)
        if len(best_docs) >= limit and (rest + bounds[term]) * (1 + _SLACK) < theta:
            break  # no document not yet seen can reach the weakest of the best
        found = arrays[term]
        fresh = np.ones(len(found), dtype=bool)
        for taken in order[:i]:  # documents of a term already taken were scored then
            fresh &= ~_member(found["doc"], arrays[taken]["doc"])[0]
        found = found[fresh]
        own = weight(found, idfs[term], avgdl, pair)
        # Best own weight first, a first slice before the rest: the slice sets ``theta`` that prunes the rest.
        by_weight = np.argsort(-own, kind="stable")
        cut = max(4 * limit, _FIRST_SLICE)
        for part in (by_weight[:cut], by_weight[cut:]):
            if not len(part):
                continue
            chosen, chosen_own = found[part], own[part]
            if len(best_docs) >= limit:
                hopeful = (chosen_own + rest) * (1 + _SLACK) >= theta
                chosen, chosen_own = chosen[hopeful], chosen_own[hopeful]
            if not len(chosen):
                continue
            scored += len(chosen)
            score = _exact(chosen["doc"], term, chosen_own, later, terms, arrays, idfs, avgdl, pair)
            best_scores = np.concatenate([best_scores, score])
            best_docs = np.concatenate([best_docs, chosen["doc"].astype(np.int64)])
            keep = np.lexsort((best_docs, -best_scores))[:limit]
            best_scores, best_docs = best_scores[keep], best_docs[keep]
            if len(best_docs) >= limit:
                theta = float(best_scores[-1])
    return [(float(s), int(d)) for s, d in zip(best_scores, best_docs, strict=True)], scored


def ranked(
    postings: Postings,
    query: Sequence[str],
    limit: int,
    weights: Sequence[float],
    window: Window = "rank",
    window_size: int = 0,
) -> list[tuple[float, int]]:
    """(score, doc id) best first: the exact early-stopping top-k, or under a ``window`` cut ``bm25.rank``."""
    if window == "rank":
        return top_k(postings, query, limit, weights)[0]
    return rank(postings, query, limit, weights, window, window_size)
