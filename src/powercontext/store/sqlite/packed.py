"""The SQLite store's ``FullTextIndex`` (core/fulltext.py): packed postings (core/packed.py) in plain tables,
ranked by the exact early-stopping top-k (core/topk.py).

FTS5 kept the postings before (issue 39), but its postings reach Python only through ``fts5vocab``, one row per
posting at ~1 µs each: at a million memories a query's terms hold 200,000 postings at the median, and ranking
them all cost hundreds of milliseconds, so a search past a posting budget ranked only the newest matches of
its rarest term. Packed segments reach NumPy as a few blobs per term, and the top-k scores only the documents
that can still make the cut.

Writes are buffered per transaction and written by ``flush`` just before COMMIT (the store's ``_write``), a few
statements per transaction: each touched term gets one new open segment. A term past ``MAX_OPEN_SEGMENTS`` open
ones (as this process believes: ``SegmentCounts``, learnt from its writes and searches, a hint that never changes
a result) has its newest merged, newest first while the older one is at most twice what is being merged, so a big
segment is not rewritten for a small write and a posting is rewritten O(log n) times. Full segments are sealed.
``N`` and the token total count every document ever added to a Scope's index (``fts_scope_totals``), as FTS5's
contentless tables and the OceanBase store do, so both stores score alike.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from powercontext.store.core import bm25, topk
from powercontext.store.core.bm25 import Postings, Window
from powercontext.store.core.fulltext import INDEXES
from powercontext.store.core.packed import (
    SEGMENT_POSTINGS,
    IndexedDoc,
    SegmentCounts,
    SegmentKey,
    doc_terms,
    group_postings,
    in_doc_order,
    indexed_doc,
    joined,
    posting_term,
    split,
    stored_terms,
    unpack,
)
from powercontext.store.core.segment_codec import encode
from powercontext.store.sqlite.snapshot import one_snapshot
from powercontext.store.sqlite.tails import read as read_tails
from powercontext.store.sqlite.tails import remove as remove_from_tails
from powercontext.store.sqlite.tails import write as write_tails

_CHUNK: Final = 500  # values per IN (...) list
# Open segments a term may have per Scope before a write merges the newest of them: a single create adds one
# per term, so merges (and the blobs they rewrite) come once every few writes, and a search reads a few more rows.
MAX_OPEN_SEGMENTS: Final = 8

SCHEMA: Final = """
CREATE TABLE fts_segments (
  id INTEGER PRIMARY KEY,
  fts_table TEXT NOT NULL,
  scope_tag TEXT NOT NULL,
  term TEXT NOT NULL,
  open INTEGER NOT NULL,
  n INTEGER NOT NULL,
  lo INTEGER NOT NULL,
  hi INTEGER NOT NULL,
  postings BLOB NOT NULL
);
CREATE INDEX fts_segments_by_term ON fts_segments (fts_table, scope_tag, term, open, n);
CREATE TABLE fts_docs (
  fts_table TEXT NOT NULL,
  doc_id INTEGER NOT NULL,
  scope_tag TEXT NOT NULL,
  terms TEXT NOT NULL,
  PRIMARY KEY (fts_table, doc_id)
) WITHOUT ROWID;
CREATE TABLE fts_scope_totals (
  fts_table TEXT NOT NULL,
  scope_tag TEXT NOT NULL,
  docs INTEGER NOT NULL,
  tokens INTEGER NOT NULL,
  PRIMARY KEY (fts_table, scope_tag)
) WITHOUT ROWID;
"""


class PackedIndex:
    """``FullTextIndex`` over ``fts_segments``; one per store, used by its single writer and every reader."""

    def __init__(self, tails: bool = True) -> None:
        self._tails = tails  # small writes go to tail rows (tails.py); not before migration 14 made their table
        self._docs: dict[tuple[str, int], IndexedDoc] = {}
        self._removed: set[tuple[str, int]] = set()
        self._totals: Counter[tuple[str, str, str]] = Counter()  # (index, scope tag, "docs" | "tokens")
        self.open_segments = SegmentCounts(MAX_OPEN_SEGMENTS)

    # -- writes (the store's writer, under its lock) ------------------------------------------------

    def add(self, conn: Any, index: str, doc_id: int, scope_tag: str, columns: Sequence[str]) -> None:
        entry = indexed_doc(scope_tag, columns)
        self._docs[(index, doc_id)] = entry
        self._totals[(index, scope_tag, "docs")] += 1
        self._totals[(index, scope_tag, "tokens")] += entry[1]

    def remove(self, conn: Any, index: str, doc_id: int, scope_tag: str) -> None:
        if self._docs.pop((index, doc_id), None) is not None:
            return  # added earlier in this transaction, after any stored version was queued for removal
        self._removed.add((index, doc_id))

    def flush(self, conn: Any) -> None:
        """Write the transaction's removals, then its additions (inside it, before COMMIT)."""
        if self._removed:
            _remove_documents(conn, sorted(self._removed), self._tails)
        if self._docs:
            _add_documents(conn, self._docs, self.open_segments, self._tails)
        conn.executemany(
            "INSERT INTO fts_scope_totals (fts_table, scope_tag, docs, tokens) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (fts_table, scope_tag) DO UPDATE SET docs = docs + excluded.docs,"
            " tokens = tokens + excluded.tokens",
            [
                (index, tag, count, self._totals[(index, tag, "tokens")])
                for (index, tag, what), count in sorted(self._totals.items())
                if what == "docs"
            ],
        )
        self.discard()

    def discard(self) -> None:
        """Forget the buffered changes (the transaction rolled back, or they were flushed)."""
        self._docs.clear()
        self._removed.clear()
        self._totals.clear()

    # -- reads ------------------------------------------------------------------------------------

    def ranked(
        self,
        conn: Any,
        index: str,
        scope_tag: str,
        terms: Sequence[str],
        limit: int,
        window: Window = "rank",
        window_size: int = 0,
    ) -> list[tuple[float, int]]:
        query = stored_terms(terms)
        if not query or limit < 1:
            return []
        postings = read_postings(conn, index, scope_tag, query, self.open_segments)
        return topk.ranked(postings, query, limit, INDEXES[index].weights, window, window_size)

    def holders(self, conn: Any, index: str, scope_tag: str, terms: Sequence[str], limit: int) -> list[int]:
        query = stored_terms(terms)
        if not query or limit < 1:
            return []
        return bm25.holders(read_postings(conn, index, scope_tag, query, self.open_segments), limit)

    def documents(self, conn: Any, index: str, scope_tag: str, terms: Sequence[str]) -> dict[str, int]:
        stored = {t: posting_term(t) for t in dict.fromkeys(terms) if t}
        if not stored:
            return {}
        found: dict[str, int] = {}
        keys = sorted(set(stored.values()))
        with one_snapshot(conn):  # segments and tail rows of one state (``one_snapshot``)
            rows = _segment_rows(conn, "term, SUM(n)", index, scope_tag, keys, " GROUP BY term")
            found.update({str(term): int(n) for term, n in rows})
            for term, arrays in read_tails(conn, (index, scope_tag), keys).items():
                found[term] = found.get(term, 0) + sum(map(len, arrays))
        return {term: found[key] for term, key in stored.items() if key in found}

    def forget_scope(self, conn: Any, scope_tag: str) -> None:
        """Drop every index's postings, documents and totals of one Scope (its deletion)."""
        for table in ("fts_segments", "fts_tail", "fts_docs", "fts_scope_totals"):
            conn.execute(f"DELETE FROM {table} WHERE scope_tag = ?", (scope_tag,))


def read_postings(
    conn: Any, index: str, scope_tag: str, query: Sequence[str], open_segments: SegmentCounts | None = None
) -> Postings:
    """Every input of BM25 for the query's (stored-form) terms over one Scope's index, from one snapshot."""
    with one_snapshot(conn):
        return _read_postings(conn, index, scope_tag, query, open_segments)


def _read_postings(
    conn: Any, index: str, scope_tag: str, query: Sequence[str], open_segments: SegmentCounts | None
) -> Postings:
    totals = conn.execute(
        "SELECT docs, tokens FROM fts_scope_totals WHERE fts_table = ? AND scope_tag = ?", (index, scope_tag)
    ).fetchone()
    if totals is None:
        return Postings(0, 0, {}, {})
    blobs: dict[str, list[tuple[int, bytes]]] = {}
    counts: Counter[str] = Counter()
    rows = conn.execute(
        "SELECT term, open, n, lo, postings FROM fts_segments WHERE fts_table = ? AND scope_tag = ?"
        f" AND term IN ({','.join('?' * len(query))})",
        (index, scope_tag, *query),
    )
    opened: Counter[str] = Counter()
    for term, is_open, n, lo, blob in rows:
        counts[term] += n
        opened[term] += is_open
        blobs.setdefault(term, []).append((lo, blob))
    for term, pieces in read_tails(conn, (index, scope_tag), query).items():
        for piece in pieces:
            counts[term] += len(piece)
            blobs.setdefault(term, []).append((int(piece["doc"][0]), piece.tobytes()))
    if open_segments is not None:
        for term in blobs:
            open_segments.seen((index, scope_tag, term), opened[term])
    arrays = {t: joined(parts) for t, parts in blobs.items()}
    return Postings(int(totals[0]), int(totals[1]), counts, arrays)


def _add_documents(
    conn: Any, docs: dict[tuple[str, int], IndexedDoc], open_segments: SegmentCounts, use_tails: bool
) -> None:
    grouped = group_postings(docs)
    if use_tails:
        grouped = write_tails(conn, grouped)
    due = open_segments.over(grouped)
    opened = _open_segments(conn, sorted(due)) if due else {}
    merging: dict[SegmentKey, list[int]] = {}  # key -> ids of the open segments merged into its new one
    after: dict[SegmentKey, int] = {}  # a merged key's open segments after this write
    for key in due:
        older = opened.get(key, [])
        size = len(grouped[key])
        # Newest first, while an older segment is at most twice what is being merged (big ones stay put), and in
        # any case until at most half the limit stay open, so a term's open segments stay bounded.
        while older and (older[-1][1] <= 2 * size or len(older) >= MAX_OPEN_SEGMENTS // 2):
            seg_id, n = older.pop()
            merging.setdefault(key, []).append(seg_id)
            size += n
        after[key] = len(older) + (size % SEGMENT_POSTINGS > 0)
    stored = _segments(conn, [seg_id for ids in merging.values() for seg_id in ids])
    written: list[tuple[str, str, str, int, npt.NDArray[Any]]] = []
    for key, fresh in grouped.items():
        parts = [fresh, *(stored[seg_id] for seg_id in merging.get(key, ()))]
        array = parts[0] if len(parts) == 1 else in_doc_order(np.concatenate(parts))
        for piece in split(array):
            written.append((*key, int(len(piece) < SEGMENT_POSTINGS), piece))
    conn.executemany("DELETE FROM fts_segments WHERE id = ?", [(seg_id,) for seg_id in stored])
    conn.executemany(
        "INSERT INTO fts_segments (fts_table, scope_tag, term, open, n, lo, hi, postings)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (index, tag, term, is_open, len(a), int(a["doc"][0]), int(a["doc"][-1]), encode(a))
            for index, tag, term, is_open, a in written
        ],
    )
    open_segments.written((key for key in grouped if key not in after), after)
    conn.executemany(
        "INSERT OR REPLACE INTO fts_docs (fts_table, doc_id, scope_tag, terms) VALUES (?, ?, ?, ?)",
        [(index, doc, tag, doc_terms(tf)) for (index, doc), (tag, _, tf) in docs.items()],
    )


def _open_segments(conn: Any, keys: Sequence[SegmentKey]) -> dict[SegmentKey, list[tuple[int, int]]]:
    """(segment id, postings) of each key's open segments, oldest first."""
    by_group: dict[tuple[str, str], list[str]] = {}
    for index, tag, term in keys:
        by_group.setdefault((index, tag), []).append(term)
    found: dict[SegmentKey, list[tuple[int, int]]] = {}
    for (index, tag), terms in by_group.items():
        for term, seg_id, n in _segment_rows(conn, "term, id, n", index, tag, terms, " AND open = 1"):
            found.setdefault((index, tag, term), []).append((int(seg_id), int(n)))
    for segments in found.values():
        segments.sort()
    return found


def _segment_rows(
    conn: Any, columns: str, index: str, scope_tag: str, terms: Sequence[str], tail: str = ""
) -> Iterator[Any]:
    """``SELECT columns FROM fts_segments`` for these terms of one index and Scope, then ``tail`` (a further
    condition or a grouping by term), ``_CHUNK`` terms a statement."""
    for start in range(0, len(terms), _CHUNK):
        part = terms[start : start + _CHUNK]
        yield from conn.execute(
            f"SELECT {columns} FROM fts_segments WHERE fts_table = ? AND scope_tag = ?"
            f" AND term IN ({','.join('?' * len(part))}){tail}",
            (index, scope_tag, *part),
        )


def _segments(conn: Any, ids: Sequence[int]) -> dict[int, npt.NDArray[Any]]:
    """The postings of the segments with these ids."""
    found: dict[int, npt.NDArray[Any]] = {}
    for start in range(0, len(ids), _CHUNK):
        part = ids[start : start + _CHUNK]
        rows = conn.execute(f"SELECT id, postings FROM fts_segments WHERE id IN ({','.join('?' * len(part))})", part)
        found.update((int(seg_id), unpack(blob)) for seg_id, blob in rows)
    return found


def _remove_documents(conn: Any, removed: Sequence[tuple[str, int]], use_tails: bool) -> None:
    """Take stored documents out of their segments: rewrite the segments of their terms that cover them."""
    by_index: dict[str, list[int]] = {}
    for index, doc in removed:
        by_index.setdefault(index, []).append(doc)
    for index, docs in by_index.items():
        for start in range(0, len(docs), _CHUNK):
            chunk = docs[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            stored = conn.execute(
                f"SELECT doc_id, scope_tag, terms FROM fts_docs WHERE fts_table = ? AND doc_id IN ({marks})",
                (index, *chunk),
            ).fetchall()
            gone = np.array(sorted(int(row[0]) for row in stored), dtype="<i8")
            for tag in {str(row[1]) for row in stored} if use_tails else ():
                remove_from_tails(conn, (index, tag), gone)
            for (tag, term), lo, hi in _touched_terms(stored):
                rows = conn.execute(
                    "SELECT id, postings FROM fts_segments WHERE fts_table = ? AND scope_tag = ? AND term = ?"
                    " AND lo <= ? AND hi >= ?",
                    (index, tag, term, hi, lo),
                ).fetchall()
                for seg_id, blob in rows:
                    array = unpack(blob)
                    kept = array[~np.isin(array["doc"], gone)]
                    if len(kept) == len(array):
                        continue
                    if not len(kept):
                        conn.execute("DELETE FROM fts_segments WHERE id = ?", (seg_id,))
                        continue
                    conn.execute(
                        "UPDATE fts_segments SET open = 1, n = ?, lo = ?, hi = ?, postings = ? WHERE id = ?",
                        (len(kept), int(kept["doc"][0]), int(kept["doc"][-1]), encode(kept), seg_id),
                    )
            conn.execute(f"DELETE FROM fts_docs WHERE fts_table = ? AND doc_id IN ({marks})", (index, *chunk))


def _touched_terms(stored: Sequence[tuple[Any, ...]]) -> list[tuple[tuple[str, str], int, int]]:
    """((scope tag, term), lowest doc, highest doc) over the removed documents holding each term."""
    spans: dict[tuple[str, str], tuple[int, int]] = {}
    for doc, tag, terms in stored:
        for term in str(terms).split():
            lo, hi = spans.get((tag, term), (doc, doc))
            spans[(tag, term)] = (min(lo, doc), max(hi, doc))
    return [(key, lo, hi) for key, (lo, hi) in spans.items()]
