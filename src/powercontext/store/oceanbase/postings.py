"""Packed postings of the exact full-text index: the stored term form, the segment array format, and this
process's belief of how many open segments each term has (fulltext.py explains the scheme)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Final

from powercontext.store.core.fulltext import INDEXES
from powercontext.store.core.packed import (
    MAX_TERM_CHARS,
    SEGMENT_POSTINGS,
    SegmentKey,
    pack,
    posting_term,
    split,
    unpack,
)

__all__ = [
    "MAX_SEGMENTS",
    "MAX_TERM_CHARS",
    "SEGMENT_POSTINGS",
    "TABLES",
    "SegmentCounts",
    "SegmentKey",
    "pack",
    "posting_term",
    "split",
    "unpack",
]

# Open (not full) segments a term may have per Scope before a write compacts them.
MAX_SEGMENTS: Final = 12
# Segment numbers: the transaction's sequence number times this, plus the segment's index within it.
SEGMENTS_PER_WRITE: Final = 1 << 20
MAX_COMPACTIONS: Final = 2_000  # terms compacted by one write beyond those it touches
MAX_TRACKED_TERMS: Final = 1_000_000


# Every index's text columns and BM25 weights (one list for both stores).
TABLES: Final = INDEXES


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
