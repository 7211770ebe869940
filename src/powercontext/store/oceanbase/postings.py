"""Packed postings of the exact full-text index: the stored term form, the segment array format, and this
process's belief of how many open segments each term has (fulltext.py explains the scheme)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from powercontext.store.core.bm25 import POSTING

MAX_TERM_CHARS: Final = 200
# Open (not full) segments a term may have per Scope before a write compacts them.
MAX_SEGMENTS: Final = 12
# A compaction writes full segments of this many postings (80 KB), which are sealed: never read by a later
# compaction, so compacting a common term rewrites at most one segment's worth of old postings, and no
# statement carries a posting list of the whole index.
SEGMENT_POSTINGS: Final = 4096
# Segment numbers: the transaction's sequence number times this, plus the segment's index within it.
SEGMENTS_PER_WRITE: Final = 1 << 20
MAX_COMPACTIONS: Final = 2_000  # terms compacted by one write beyond those it touches
MAX_TRACKED_TERMS: Final = 1_000_000


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


@lru_cache(maxsize=65536)
def posting_term(token: str) -> str:
    """The stored form of a term: case-folded like FTS5's unicode61; a very long one is shortened losslessly
    enough (prefix + digest) to fit the key column."""
    folded = token.lower()
    if len(folded) <= MAX_TERM_CHARS:
        return folded
    return folded[: MAX_TERM_CHARS - 41] + "#" + hashlib.sha1(folded.encode("utf-8")).hexdigest()


SegmentKey = tuple[str, str, str]  # (fts table, scope tag, term)


def pack(rows: Sequence[tuple[int, int, int, int]]) -> npt.NDArray[Any]:
    """Postings (doc, tf1, tf2, tokens) as one segment array, in doc order."""
    array = np.array(rows, dtype=POSTING) if rows else np.empty(0, dtype=POSTING)
    return np.sort(array, order="doc")


def unpack(blob: bytes) -> npt.NDArray[Any]:
    return np.frombuffer(blob, dtype=POSTING)


def split(array: npt.NDArray[Any]) -> list[npt.NDArray[Any]]:
    """Full segments of ``SEGMENT_POSTINGS`` (sealed), then the rest (open), in doc order; none when empty."""
    return [array[i : i + SEGMENT_POSTINGS] for i in range(0, len(array), SEGMENT_POSTINGS)]


class SegmentCounts:
    """How many open (not full) segments this process believes each (index, scope tag, term) has: learnt
    from its own writes and from every search (which reads all of a term's segments anyway). Only a
    compaction hint: a wrong belief makes a term compact earlier or later, never changes a result."""

    def __init__(self) -> None:
        self._counts: dict[SegmentKey, int] = {}
        self._lock = threading.Lock()

    def seen(self, key: SegmentKey, count: int) -> None:
        with self._lock:
            if len(self._counts) >= MAX_TRACKED_TERMS:
                self._counts.clear()
            self._counts[key] = count

    def due(self, touched: Iterable[SegmentKey]) -> set[SegmentKey]:
        """The touched terms that would exceed ``MAX_SEGMENTS``, and any a search found over it."""
        with self._lock:
            due = {key for key in touched if self._counts.get(key, 0) + 1 > MAX_SEGMENTS}
            due.update(k for k, n in self._counts.items() if n > MAX_SEGMENTS and len(due) < MAX_COMPACTIONS)
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
