"""The bytes of one postings segment, the same on both stores.

Two encodings, told apart by their first eight bytes:

- *records*, the first one: ``core.bm25.POSTING`` records as they lie in memory, 20 bytes per posting. A record
  starts with its doc id, a rowid, never negative, so its eighth byte (the id's most significant) is never 0xff.
- *columns*: a 16-byte header (``_ONE`` or ``_TWO`` then the segment's lowest doc id), then each doc id's offset
  from it (uint32), the first column's frequencies (uint16), the second column's (uint16, ``_TWO`` only) and the
  document tokens (uint16): 8 bytes per posting, 10 with a second column.

A search reads every segment of its terms, at a million memories ~6 MB per query at the median and 21 MB at
worst: reading is the largest part of its time, and it shrinks with the bytes. Segments are written in columns
whenever their values fit (an id span under 2^32, frequencies and lengths under 2^16: every memory does), else
in records. Migration 16 rewrote a SQLite store's segments; on OceanBase a stored segment stays as it was written
until a merge or a removal rewrites it. Both encodings read into the same records and columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from powercontext.store.core.bm25 import FIELDS, POSTING, Columns

_ONE: Final = b"pcseg\x00\x01\xff"  # columns, one text column (no second frequency)
_TWO: Final = b"pcseg\x00\x02\xff"  # columns, two text columns
_HEADER: Final = 16
_SMALL: Final = (1 << 16) - 1
_SPAN: Final = (1 << 32) - 1


def encode(array: npt.NDArray[Any]) -> bytes:
    """A segment's bytes: columns when every value fits them, else records."""
    if not len(array):
        return b""
    docs = array["doc"]
    lo = int(docs.min())
    two = bool(array["tf2"].any())
    small = [array["tf1"], array["len"], *([array["tf2"]] if two else [])]
    if int(docs.max()) - lo > _SPAN or any(int(c.min()) < 0 or int(c.max()) > _SMALL for c in small):
        return array.tobytes()
    parts = [
        _TWO if two else _ONE,
        np.int64(lo).tobytes(),
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


def postings(blob: bytes) -> int:
    """How many postings a segment's bytes hold."""
    head = bytes(blob[:8])
    if head == _ONE:
        return (len(blob) - _HEADER) // 8
    if head == _TWO:
        return (len(blob) - _HEADER) // 10
    return len(blob) // POSTING.itemsize


def decode(blob: bytes) -> npt.NDArray[Any]:
    """A segment's postings as ``POSTING`` records (what a write merges or rewrites)."""
    if is_records(blob):
        return np.frombuffer(blob, dtype=POSTING)  # no copy
    found = columns([blob])
    out = np.empty(len(found), dtype=POSTING)
    for name in FIELDS:
        out[name] = found[name]
    return out


def columns(blobs: Sequence[bytes]) -> Columns:
    """The postings of segments, in the order given, as columns (what a search reads): each segment's values
    are written straight into their place in each column, never through 20-byte records (3-4x the time at a
    million memories) or a concatenation."""
    sizes = [postings(blob) for blob in blobs]
    total = sum(sizes)
    doc = np.empty(total, dtype=np.int64)
    tf1, size = np.empty(total, dtype=np.int32), np.empty(total, dtype=np.int32)
    tf2 = np.zeros(total, dtype=np.int32)
    at = 0
    for blob, n in zip(blobs, sizes, strict=True):
        end = at + n
        head = bytes(blob[:8])
        if head not in (_ONE, _TWO):
            records = np.frombuffer(blob, dtype=POSTING)
            doc[at:end], tf1[at:end], tf2[at:end], size[at:end] = (records[name] for name in FIELDS)
        else:
            lo = int(np.frombuffer(blob, dtype="<i8", count=1, offset=8)[0])
            doc[at:end] = np.frombuffer(blob, dtype="<u4", count=n, offset=_HEADER)
            doc[at:end] += lo
            column = _HEADER + 4 * n
            tf1[at:end] = np.frombuffer(blob, dtype="<u2", count=n, offset=column)
            if head == _TWO:
                column += 2 * n
                tf2[at:end] = np.frombuffer(blob, dtype="<u2", count=n, offset=column)
            size[at:end] = np.frombuffer(blob, dtype="<u2", count=n, offset=column + 2 * n)
        at = end
    return Columns(doc, tf1, tf2, size)
