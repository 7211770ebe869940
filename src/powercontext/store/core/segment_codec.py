"""The bytes of one postings segment, the same on both stores.

Two encodings, told apart by their first eight bytes:

- *records*, the first one: ``core.bm25.POSTING`` records as they lie in memory, 20 bytes per posting. A record
  starts with its doc id, a rowid, never negative, so its eighth byte (the id's most significant) is never 0xff.
- *columns*: a 24-byte header (``_ONE`` or ``_TWO``; the segment's lowest doc id; its highest frequencies and
  shortest length, uint16 each, then two bytes of padding), then each doc id's offset from the lowest (uint32),
  the first column's frequencies (uint16), the second column's (uint16, ``_TWO`` only) and the document tokens
  (uint16): 8 bytes per posting, 10 with a second column.

A search reads every segment of its terms, at a million memories ~293,000 postings at the median and a million
at worst: reading and decoding them was most of its time, and both shrink with the bytes. Columns are read in
place (``SegmentView``): a lookup searches a segment's offsets without decoding it, and a term's upper bound
comes from the headers. Segments of 32 postings or more are written in columns whenever their values fit (an id
span under 2^32, frequencies and lengths under 2^16: every memory does), others in records. Migration 16
rewrites a store's segments from records into columns, on both stores.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from powercontext.store.core.bm25 import POSTING

_ONE: Final = b"pcseg\x00\x01\xff"  # columns, one text column (no second frequency)
_TWO: Final = b"pcseg\x00\x02\xff"  # columns, two text columns
_HEADER: Final = 24
_HEAD: Final = struct.Struct("<8sqHHHH")  # kind, lowest id, highest frequencies, shortest length, padding
# The second frequencies of a one-column segment (read only: a view never writes).
_ZEROS: Final = np.zeros(8192, dtype="<u2")
_ZEROS.flags.writeable = False
_SMALL: Final = (1 << 16) - 1
_FEWEST: Final = 32
_SPAN: Final = (1 << 32) - 1


@dataclass(frozen=True, slots=True)
class SegmentView:
    """One segment's postings where its bytes lie: doc id = ``lo`` + offset, offsets ascending."""

    lo: int
    offsets: npt.NDArray[Any]
    tf1: npt.NDArray[Any]
    tf2: npt.NDArray[Any]  # all zero when the index has one text column
    tokens: npt.NDArray[Any]
    # Highest first and second frequency, shortest document: from a column segment's header; None for records,
    # whose three reductions are computed only if a search asks (most reads of small, open segments never do).
    header: tuple[int, int, int] | None

    @property
    def maxima(self) -> tuple[int, int, int]:
        """The highest first and second frequency and the shortest document."""
        if self.header is not None:
            return self.header
        return int(self.tf1.max()), int(self.tf2.max()), int(self.tokens.min())

    @property
    def first(self) -> int:
        """The lowest doc id."""
        return self.lo + int(self.offsets[0])

    @property
    def hi(self) -> int:
        """The highest doc id."""
        return self.lo + int(self.offsets[-1])

    def __len__(self) -> int:
        return len(self.offsets)


def encode(array: npt.NDArray[Any]) -> bytes:
    """A segment's bytes (``POSTING`` records in doc order): columns when every value fits them, else records.

    A segment of fewer than ``_FEWEST`` postings stays in records: columns would save little, and a single
    create's tail rows move into hundreds of such segments at once (~40 µs each in columns, ~0.1 µs as records)."""
    n = len(array)
    if n < _FEWEST:
        return array.tobytes()
    docs = array["doc"]
    lo = int(docs[0])
    offsets = docs - lo
    if not bool(np.all(offsets[1:] > offsets[:-1])) or int(offsets[-1]) > _SPAN:
        return array.tobytes()
    small = np.empty((3, n), dtype=np.int32)  # first frequencies, second frequencies, lengths
    small[0], small[1], small[2] = array["tf1"], array["tf2"], array["len"]
    low, high = small.min(axis=1), small.max(axis=1)
    if int(low.min()) < 0 or int(high.max()) > _SMALL:
        return array.tobytes()
    two = int(high[1]) > 0
    head = _HEAD.pack(_TWO if two else _ONE, lo, int(high[0]), int(high[1]), int(low[2]), 0)
    body = small if two else small[[0, 2]]
    return b"".join((head, offsets.astype("<u4").tobytes(), body.astype("<u2").tobytes()))


def is_records(blob: bytes) -> bool:
    """Whether a segment's bytes are in the first encoding."""
    return bytes(blob[:8]) not in (_ONE, _TWO)


def view(blob: bytes) -> SegmentView:
    """A segment's postings in place (records: their fields, with ``lo`` 0)."""
    head, lo, high_tf1, high_tf2, shortest, _ = _HEAD.unpack_from(blob) if len(blob) >= _HEADER else (b"",) * 6
    if head not in (_ONE, _TWO):
        records = np.frombuffer(blob, dtype=POSTING)
        return SegmentView(0, records["doc"], records["tf1"], records["tf2"], records["len"], None)
    two = head == _TWO
    n = (len(blob) - _HEADER) // (10 if two else 8)
    at = _HEADER + 4 * n
    tf1 = np.frombuffer(blob, dtype="<u2", count=n, offset=at)
    if two:
        at += 2 * n
        tf2 = np.frombuffer(blob, dtype="<u2", count=n, offset=at)
    else:
        tf2 = _ZEROS[:n] if n <= len(_ZEROS) else np.zeros(n, dtype="<u2")
    tokens = np.frombuffer(blob, dtype="<u2", count=n, offset=at + 2 * n)
    offsets = np.frombuffer(blob, dtype="<u4", count=n, offset=_HEADER)
    return SegmentView(lo, offsets, tf1, tf2, tokens, (high_tf1, high_tf2, shortest))


def decode(blob: bytes) -> npt.NDArray[Any]:
    """A segment's postings as ``POSTING`` records (what a write merges or rewrites)."""
    if is_records(blob):
        return np.frombuffer(blob, dtype=POSTING)  # no copy
    part = view(blob)
    out = np.empty(len(part), dtype=POSTING)
    out["doc"] = part.offsets
    out["doc"] += part.lo
    out["tf1"], out["tf2"], out["len"] = part.tf1, part.tf2, part.tokens
    return out
