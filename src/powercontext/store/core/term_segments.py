"""A term's postings as a search reads them: its segments in place (``segment_codec.SegmentView``).

The exact top-k (core/topk.py) looks most of a query's postings up without ever scoring them all: at a million
memories ~90% belong to terms it only probes for the documents other terms found. Those terms are searched
segment by segment where their bytes lie, and their upper bound comes from the segments' headers; only a term
whose every posting is needed (the one being taken, the exhaustive ranking) is joined into ``Columns``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from powercontext.store.core import id_marks
from powercontext.store.core.bm25 import Columns, column_weight
from powercontext.store.core.segment_codec import SegmentView


class TermSegments:
    """One term's segments, lowest doc first. Read like ``Columns`` (``postings["doc"]``, a mask), it joins them
    once, on first use; ``lookup`` and ``maxima`` do not."""

    __slots__ = ("_joined", "_size", "_split", "segments")

    def __init__(self, segments: Sequence[SegmentView]) -> None:
        self.segments = sorted(segments, key=lambda part: part.first)
        self._size = sum(map(len, self.segments))
        self._joined: Columns | None = None
        self._split: tuple[Columns, list[SegmentView]] | None = None

    def __len__(self) -> int:
        return self._size

    def columns(self) -> Columns:
        """Every posting, a column per field, in segment order (doc order unless segments overlap)."""
        if self._joined is None:
            if self._split is not None and not self._split[1]:
                # Looked up before it was taken, and no segment overlapped: the lookups' chain is every posting,
                # in doc order, already joined.
                self._joined = self._split[0]
            else:
                self._joined = _join(self.segments)
        return self._joined

    @overload
    def __getitem__(self, key: str) -> npt.NDArray[Any]: ...
    @overload
    def __getitem__(self, key: npt.NDArray[Any]) -> Columns: ...
    def __getitem__(self, key: str | npt.NDArray[Any]) -> npt.NDArray[Any] | Columns:
        return self.columns()[key]

    def maxima(self) -> tuple[int, int, int]:
        """The highest first and second frequency and the shortest document, from the segments' headers (or
        their records)."""
        each = [part.maxima for part in self.segments]
        return max(m[0] for m in each), max(m[1] for m in each), min(m[2] for m in each)

    def lookup(
        self, docs: npt.NDArray[np.int64], term_idf: float, avgdl: float, pair: tuple[float, float]
    ) -> npt.NDArray[np.float64]:
        """The term's BM25 weight in each of ``docs`` (ascending, distinct), 0 where it does not occur.

        The ids are searched in one sorted id column joined, without sorting, from the segments whose ranges do
        not overlap (all but open segments merged across batches and a revised document's), and in each of the
        others on its own; no more ids than segments (what reaches the weakest terms once the bounds pruned)
        are searched segment by segment, without joining. At a million memories the join is ~7 ms for the
        largest terms, and searching every segment on its own cost ~25% more than joining for a few hundred
        ids. Only the postings found are weighed."""
        found = np.zeros(len(docs), dtype=np.float64)
        if self._split is None and len(docs) <= len(self.segments):
            _search(self.segments, docs, found, term_idf, avgdl, pair)  # a few ids: no join
            return found
        chain, others = self._chain()
        if len(chain):
            counts = (chain["tf1"], chain["tf2"], chain["len"])
            _weigh_found(found, docs, chain["doc"], counts, term_idf, avgdl, pair)
        _search(others, docs, found, term_idf, avgdl, pair)
        return found

    def _chain(self) -> tuple[Columns, list[SegmentView]]:
        """The segments that follow each other without overlapping, joined (ids ascending), and the rest."""
        if self._split is None:
            chain: list[SegmentView] = []
            others: list[SegmentView] = []
            # Earliest end first (interval scheduling): a wide segment, open ones merged across batches, would
            # otherwise push every narrower one it spans out of the chain.
            for part in sorted(self.segments, key=lambda segment: segment.hi):
                (chain if not chain or part.first > chain[-1].hi else others).append(part)
            self._split = (_join(chain), others)
        return self._split


def _join(segments: Sequence[SegmentView]) -> Columns:
    """The postings of ``segments``, in the order given, a column per field: each segment's values are written
    straight into their place (no 20-byte records, no concatenation)."""
    total = sum(map(len, segments))
    doc = np.empty(total, dtype=np.int64)
    tf1, tf2, tokens = (np.empty(total, dtype=np.int32) for _ in range(3))
    at = 0
    for part in segments:
        end = at + len(part)
        doc[at:end] = part.offsets
        doc[at:end] += part.lo
        tf1[at:end], tf2[at:end], tokens[at:end] = part.tf1, part.tf2, part.tokens
        at = end
    return Columns(doc, tf1, tf2, tokens)


def _search(
    segments: Sequence[SegmentView],
    docs: npt.NDArray[np.int64],
    found: npt.NDArray[np.float64],
    term_idf: float,
    avgdl: float,
    pair: tuple[float, float],
) -> None:
    """Set ``found`` to the weight of each of ``docs`` held by one of ``segments``, searched one by one."""
    if not segments or not len(docs):
        return
    starts = np.searchsorted(docs, [part.first for part in segments], side="left").tolist()
    ends = np.searchsorted(docs, [part.hi for part in segments], side="right").tolist()
    for part, start, end in zip(segments, starts, ends, strict=True):
        if start == end:
            continue
        counts = (part.tf1, part.tf2, part.tokens)
        _weigh_found(found[start:end], docs[start:end] - part.lo, part.offsets, counts, term_idf, avgdl, pair)


def _weigh_found(
    out: npt.NDArray[np.float64],
    wanted: npt.NDArray[Any],
    ids: npt.NDArray[Any],
    counts: tuple[npt.NDArray[Any], npt.NDArray[Any], npt.NDArray[Any]],
    term_idf: float,
    avgdl: float,
    pair: tuple[float, float],
) -> None:
    """Set ``out`` to the weight of each of ``wanted`` (ascending) found in ``ids`` (ascending, non-empty), whose
    first and second frequencies and lengths are ``counts``; the others are left as they are."""
    pairs = id_marks.matches(wanted, ids)
    if pairs is None:  # few ids in many postings: a binary search per id
        at = np.minimum(np.searchsorted(ids, wanted), len(ids) - 1)
        hit = ids[at] == wanted
        pairs = np.flatnonzero(hit), at[hit]
    into, at = pairs
    out[into] = column_weight(counts[0][at], counts[1][at], counts[2][at], term_idf, avgdl, pair)
