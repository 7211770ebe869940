"""Packed postings of the exact full-text index: the stored term form, the segment array format, and this
process's belief of how many open segments each term has (fulltext.py explains the scheme)."""

from __future__ import annotations

from typing import Final

from powercontext.store.core.fulltext import INDEXES
from powercontext.store.core.packed import (
    MAX_TERM_CHARS,
    SEGMENT_POSTINGS,
    SegmentCounts,
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


# Every index's text columns and BM25 weights (one list for both stores).
TABLES: Final = INDEXES
