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
comes from the headers. Segments are written in columns whenever their values fit (an id span under 2^32,
frequencies and lengths under 2^16: every memory does), else in records. Migration 16 rewrites a store's
segments from records into columns, on both stores.
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
_SPAN: Final = (1 << 32) - 1


@dataclass(frozen=True, slots=True)
class SegmentView:
    """One segment's postings where its bytes lie: doc id = ``lo`` + offset, offsets ascending."""

    lo: int
    offsets: npt.NDArray[Any]
    tf1: npt.NDArray[Any]
    tf2: npt.NDArray[Any]  # all zero when the index has one text column
    tokens: npt.NDArray[Any]
    maxima: tuple[int, int, int]  # highest first and second frequency, shortest document

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
    """A segment's bytes (``POSTING`` records in doc order): columns when every value fits them, else records."""
    if not len(array):
        return b""
    docs = array["doc"]
    lo = int(docs[0])
    two = bool(array["tf2"].any())
    small = [array["tf1"], array["len"], *([array["tf2"]] if two else [])]
    if int(docs[-1]) - lo > _SPAN or any(int(c.min()) < 0 or int(c.max()) > _SMALL for c in small):
        return array.tobytes()
    maxima = (int(array["tf1"].max()), int(array["tf2"].max()), int(array["len"].min()))
    parts = [
        _HEAD.pack(_TWO if two else _ONE, lo, *maxima, 0),
        (docs - lo).astype("<u4").tobytes(),
        array["tf1"].astype("<u2").tobytes(),
    ]
    if two:
        parts.append(array["tf2"].astype("<u2").tobytes())
    parts.append(array["len"].astype("<u2").tobytes())
    return b"".join(parts)


def is_records(blob: bytes) -> bool:
    """Whether a segment's bytes are in the first encoding."""
    return bytes(blob[:8]) not in (_ONE, _TWO)


def view(blob: bytes) -> SegmentView:
    """A segment's postings in place (records: their fields, with ``lo`` 0)."""
    head, lo, high_tf1, high_tf2, shortest, _ = _HEAD.unpack_from(blob) if len(blob) >= _HEADER else (b"",) * 6
    if head not in (_ONE, _TWO):
        records = np.frombuffer(blob, dtype=POSTING)
        maxima = (int(records["tf1"].max()), int(records["tf2"].max()), int(records["len"].min()))
        return SegmentView(0, records["doc"], records["tf1"], records["tf2"], records["len"], maxima)
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
