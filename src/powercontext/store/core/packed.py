"""Packed postings, the one layout of both stores' full-text indexes: the stored term form, segment arrays of
``core.bm25.POSTING`` records in doc order, and the grouping of a transaction's documents into them.

A segment holds at most ``SEGMENT_POSTINGS`` postings of one (index, Scope, term): a full one is sealed (never
rewritten by a merge), the rest are open. Reading a term is a handful of rows whatever its size, and decoding is
a few ``numpy.frombuffer`` columns (``segment_codec``).
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from powercontext.store.core import segment_codec
from powercontext.store.core.bm25 import POSTING
from powercontext.store.core.term_segments import TermSegments

MAX_TERM_CHARS: Final = 200
# Full segments hold this many postings (80 KB): no statement carries a posting list of a whole index.
SEGMENT_POSTINGS: Final = 4096
MAX_COMPACTIONS: Final = 2_000  # terms compacted by one write beyond those it touches
MAX_TRACKED_TERMS: Final = 1_000_000

SegmentKey = tuple[str, str, str]  # (index, scope tag, term)
# A document's index entry: (scope tag, its tokens including the tag, term frequencies per text column).
IndexedDoc = tuple[str, int, tuple[Counter[str], ...]]


@lru_cache(maxsize=65536)
def posting_term(token: str) -> str:
    """The stored form of a term: case-folded like FTS5's unicode61; a very long one is shortened losslessly
    enough (prefix + digest) to fit a key column."""
    folded = token.lower()
    if len(folded) <= MAX_TERM_CHARS:
        return folded
    return folded[: MAX_TERM_CHARS - 41] + "#" + hashlib.sha1(folded.encode("utf-8")).hexdigest()


def stored_terms(terms: Sequence[str]) -> list[str]:
    """A query's terms in their stored form (``posting_term``), each once, in query order; empty ones dropped."""
    return list(dict.fromkeys(posting_term(t) for t in terms if t))


def indexed_doc(scope_tag: str, columns: Sequence[str]) -> IndexedDoc:
    """The index entry of a document whose columns are space-separated index terms."""
    if len(columns) == 1:  # the common case (memories, experiences): one counter
        words = columns[0].split()
        return scope_tag, 1 + len(words), (Counter(map(posting_term, words)),)
    tf = tuple(Counter(map(posting_term, text.split())) for text in columns)
    return scope_tag, 1 + sum(sum(c.values()) for c in tf), tf


def doc_terms(tf: tuple[Counter[str], ...]) -> str:
    """The distinct terms of a document, space-separated (what a removal must rewrite)."""
    return " ".join(tf[0].keys() if len(tf) == 1 else set(tf[0]).union(tf[1]))


def pack(rows: Sequence[tuple[int, int, int, int]]) -> npt.NDArray[Any]:
    """Postings (doc, tf1, tf2, tokens) as one segment array, in doc order."""
    return in_doc_order(np.array(rows, dtype=POSTING) if rows else np.empty(0, dtype=POSTING))


def in_doc_order(array: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """``array``'s postings by doc id (equal ids keep their order). Sorting the id column and gathering the
    records is ~8x faster than ``np.sort(order="doc")``, which compares whole records field by field."""
    return array[np.argsort(array["doc"], kind="stable")]


def unpack(blob: bytes) -> npt.NDArray[Any]:
    """A stored segment's postings (either encoding, ``segment_codec``)."""
    return segment_codec.decode(blob)


def joined(segments: list[tuple[int, bytes]]) -> TermSegments:
    """One term's postings from its (lowest doc, segment bytes), read in place, lowest first."""
    return TermSegments([segment_codec.view(blob) for _, blob in segments])


def split(array: npt.NDArray[Any]) -> list[npt.NDArray[Any]]:
    """Full segments of ``SEGMENT_POSTINGS`` (sealed), then the rest (open), in doc order; none when empty."""
    return [array[i : i + SEGMENT_POSTINGS] for i in range(0, len(array), SEGMENT_POSTINGS)]


def group_postings(docs: dict[tuple[str, int], IndexedDoc]) -> dict[SegmentKey, npt.NDArray[Any]]:
    """A transaction's postings per (index, scope tag, term), each array in doc order."""
    # Every posting of the transaction in one array, sorted by (term key, doc), cut into one run per key:
    # a NumPy array per term cost ~25 µs each, ~36 ms of a 500-memory batch. Columns are built with
    # list.extend over each document's counters (no tuple per posting).
    slots: dict[SegmentKey, int] = {}
    key_of: list[int] = []
    doc_col: list[int] = []
    tf1_col: list[int] = []
    tf2_col: list[int] = []
    len_col: list[int] = []
    for (table, doc), (tag, tokens, tf) in docs.items():
        if len(tf) == 1:
            terms: Iterable[str] = tf[0].keys()
            tf1_col.extend(tf[0].values())
            tf2_col.extend([0] * len(tf[0]))
        else:
            terms = list(set(tf[0]).union(tf[1]))
            tf1_col.extend([tf[0].get(t, 0) for t in terms])
            tf2_col.extend([tf[1].get(t, 0) for t in terms])
        key_of.extend([slots.setdefault((table, tag, t), len(slots)) for t in terms])
        grown = len(key_of) - len(doc_col)
        doc_col.extend([doc] * grown)
        len_col.extend([tokens] * grown)
    everything = np.empty(len(key_of), dtype=POSTING)
    everything["doc"], everything["tf1"], everything["tf2"], everything["len"] = doc_col, tf1_col, tf2_col, len_col
    keys_array = np.array(key_of, dtype=np.int64)
    order = np.lexsort((everything["doc"], keys_array))
    everything, keys_array = everything[order], keys_array[order]
    cuts = np.flatnonzero(np.diff(keys_array)) + 1
    starts = [0, *cuts.tolist()]
    ends = [*cuts.tolist(), len(everything)]
    by_slot = {int(keys_array[a]): (a, b) for a, b in zip(starts, ends, strict=True) if b > a}
    return {key: everything[slice(*by_slot[slot])] for key, slot in slots.items()}


class SegmentCounts:
    """How many open (not full) segments this process believes each (index, scope tag, term) has: learnt
    from its own writes and from every search (which reads all of a term's segments anyway). Only a
    compaction hint: a wrong belief makes a term compact earlier or later, never changes a result."""

    def __init__(self, limit: int) -> None:
        self._limit = limit  # open segments a term may have before a write merges them
        self._counts: dict[SegmentKey, int] = {}
        self._lock = threading.Lock()

    def seen(self, key: SegmentKey, count: int) -> None:
        with self._lock:
            if len(self._counts) >= MAX_TRACKED_TERMS:
                self._counts.clear()
            self._counts[key] = count

    def over(self, touched: Iterable[SegmentKey]) -> set[SegmentKey]:
        """The touched terms one more open segment would take past the limit (only those: no scan of the rest)."""
        with self._lock:
            return {key for key in touched if self._counts.get(key, 0) + 1 > self._limit}

    def due(self, touched: Iterable[SegmentKey]) -> set[SegmentKey]:
        """The touched terms that would exceed the limit, and any a search found over it."""
        with self._lock:
            due = {key for key in touched if self._counts.get(key, 0) + 1 > self._limit}
            due.update(k for k, n in self._counts.items() if n > self._limit and len(due) < MAX_COMPACTIONS)
            return due

    def written(self, touched: Iterable[SegmentKey], compacted: dict[SegmentKey, int]) -> None:
        """``touched`` got one more open segment; ``compacted`` maps a key to its open segments after."""
        with self._lock:
            for key in touched:
                self._counts[key] = self._counts.get(key, 0) + 1
            self._counts.update(compacted)

    def forget(self) -> None:
        with self._lock:
            self._counts.clear()
