"""Where a few sorted doc ids occur in a long list of them, by one pass over the list.

The exact top-k (core/topk.py) looks the documents it found up in the postings of the query's other terms: at a
million memories ~10,000 ids a lookup in ~110,000 postings on average (the bench queries). A binary search per id
(``np.searchsorted``) costs ~60 ns each there, most of it cache misses; marking the ids in a table indexed by
doc id and reading that table at every posting (``take``, then ``flatnonzero``) costs ~1 ns per posting, so it
wins while a term holds fewer than ~40 postings per id looked up (``PER_ID``), which is most lookups.

The table is a boolean array as long as the highest doc id (1 MB at a million memories). Allocating it per lookup
cost more than the search it replaces (page faults on a fresh array), so a few tables are kept for reuse, each
handed to one caller at a time and cleared (only where it was marked) before it goes back.
"""

from __future__ import annotations

import threading
from typing import Any, Final

import numpy as np
import numpy.typing as npt

# Postings per looked-up id below which one pass over the postings beats a binary search per id (measured at
# 100k and 1M memories: a posting read costs ~1 ns, a binary search ~40-60 ns).
PER_ID: Final = 40
# Ids from this one up use the binary search: a table would take more than 32 MB.
_HIGHEST_ID: Final = 1 << 25
# Tables kept for reuse, one per search running at the same time: two cores rarely run more.
_KEPT: Final = 2


class _Tables:
    """Boolean tables over doc ids, reused; every table handed out is all False."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: list[npt.NDArray[np.bool_]] = []

    def take(self, size: int) -> npt.NDArray[np.bool_]:
        with self._lock:
            table = self._free.pop() if self._free else None
        if table is None or len(table) < size:
            # At least doubled, so that a store that keeps growing does not allocate one on every search.
            grown = 2 * len(table) if table is not None else 0
            table = np.zeros(min(max(size, grown), _HIGHEST_ID), dtype=bool)
        return table

    def give_back(self, table: npt.NDArray[np.bool_]) -> None:
        with self._lock:
            if len(self._free) < _KEPT:
                self._free.append(table)


_TABLES: Final = _Tables()


def matches(
    wanted: npt.NDArray[Any], ids: npt.NDArray[Any]
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]] | None:
    """The positions (in ``wanted``, in ``ids``) of every id both hold, by a pass over ``ids``; ``None`` when
    the binary search is cheaper (``ids`` much longer than ``wanted``) or the ids are too high for a table.

    Both are ascending and distinct."""
    if not len(wanted) or not len(ids) or len(ids) > PER_ID * len(wanted):
        return None
    highest = int(ids[-1])
    if highest >= _HIGHEST_ID or int(ids[0]) < 0:
        return None
    table = _TABLES.take(highest + 1)
    marked = wanted[np.searchsorted(wanted, 0) : np.searchsorted(wanted, highest, side="right")]
    table[marked] = True
    try:
        at = np.flatnonzero(table.take(ids))
    finally:
        table[marked] = False
        _TABLES.give_back(table)
    return np.searchsorted(wanted, ids[at]), at
