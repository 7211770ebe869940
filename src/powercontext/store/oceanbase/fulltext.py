"""Full-text postings and BM25 ranking identical to SQLite FTS5's ``bm25()``.

Receipts must select the same memories, in the same order, on every backend, so the ranking cannot
be the database's own relevance function: OceanBase's FULLTEXT parsers also drop one-character terms
(measured: ``a``, ``1`` and single CJK characters are never found) and split differently from the
Python tokenizer that produced the terms. Instead each indexed document keeps its exact term
postings (term frequency per column) and token count, and ranking recomputes FTS5's formula:

    idf(t)   = ln((N - n(t) + 0.5) / (n(t) + 0.5)), clamped to 1e-6 when ≤ 0
    score(d) = Σ_t idf(t) · f·(k1 + 1) / (f + k1·(1 - b + b·|d| / avgdl)),  k1 = 1.2, b = 0.75

with ``N``, ``n(t)`` and ``avgdl`` over the searched Scope's documents only, as the SQLite store's per-Scope
FTS5 tables compute them (store/sqlite/scope_fts.py: no other Scope's content may move a Scope's ranking);
``N`` and the token total count every document ever added to the Scope (``fts_scope_totals``), as a
contentless-delete FTS5 table does, ``f`` is the column-weighted frequency and ``|d|`` the document's tokens
including its scope tag.

Postings are stored packed: one ``fts_segments`` row per (index, scope tag, term, segment) holds the
segment's postings as a little-endian array of (doc id, tf1, tf2, |d|) records, decoded with NumPy.
A search reads every input of the formula in one statement (the Scope's totals and its posting arrays,
whose sizes are the terms' document counts) and scores in NumPy with the same float64 operations in the same
order as the per-posting loop, so scores still agree with FTS5 to the last bit. Measured on embedded
seekdb at 10,000 memories (docs/oceanbase.md): one row per posting cost ~35 ms per search in two
statements that scan and join every posting of the query terms; packed segments ship the same
postings in one statement.

Each write transaction adds one new segment per (index, scope tag, term) it touches, numbered from a
per-index sequence, without reading anything back. When a term reaches ``MAX_SEGMENTS`` open segments
a write compacts them into full segments of ``SEGMENT_POSTINGS`` (sealed: never compacted again) and
one open rest, so a search reads a bounded number of rows per term per ``SEGMENT_POSTINGS`` postings,
and compacting never rewrites more than the open postings of a term.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final, Literal

import numpy as np
import numpy.typing as npt

from powercontext.store.oceanbase import native_fulltext

if TYPE_CHECKING:
    from powercontext.store.oceanbase.dialect import Connection

K1: Final = 1.2
B: Final = 0.75
MAX_TERM_CHARS: Final = 200
# One posting: doc id, term frequency in the first and second text column, document tokens.
POSTING: Final = np.dtype([("doc", "<i8"), ("tf1", "<i4"), ("tf2", "<i4"), ("len", "<i4")])
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
_SAFE_NAME: Final = re.compile(r"[a-z0-9_]+")

Window = Literal["rank", "newest", "first"]


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


class FtsWriter:
    """Keeps ``fts_docs``, ``fts_segments`` and ``fts_totals`` in step with the FTS writes of the shared code.

    Additions and removals are buffered and written by ``flush`` just before the transaction commits,
    a fixed handful of multi-row statements per transaction whatever its size (measured on seekdb:
    every statement is a round trip of 0.2-0.8 ms, and re-updating one row per document cost 4.5 ms
    each). Only the store's single writer session calls it, under the write lock.
    """

    def __init__(self) -> None:
        # (table, doc) -> (scope tag, tokens, term frequencies per text column)
        self._docs: dict[tuple[str, int], tuple[str, int, tuple[Counter[str], ...]]] = {}
        # Set when the database has the engine's FULLTEXT index (native_fulltext.py), which is kept in step.
        self.native = False
        self._native_docs: dict[tuple[str, int], tuple[str, str]] = {}  # (table, doc) -> (scope tag, body)
        self._removed: set[tuple[str, int]] = set()  # stored documents to take out of the index
        self._totals: Counter[tuple[str, str]] = Counter()  # (table, "docs" | "tokens")
        self._scope_totals: dict[tuple[str, str], tuple[int, int]] = {}  # (table, scope tag) -> (docs, tokens)
        self.segments = SegmentCounts()

    def add(self, conn: Connection, table: str, doc_id: int, scope_tag: str, texts: Sequence[str]) -> None:
        spec = TABLES[table]
        if len(spec.columns) == 1:  # the common case (memories, experiences): one counter, no per-term tuples
            words = texts[0].split()
            tf: tuple[Counter[str], ...] = (Counter(map(posting_term, words)),)
            tokens = 1 + len(words)  # the scope tag is one token
        else:
            tf = tuple(Counter(map(posting_term, text.split())) for text in texts)
            tokens = 1 + sum(sum(c.values()) for c in tf)
        self._docs[(table, doc_id)] = (scope_tag, tokens, tf)
        if self.native:
            self._native_docs[(table, doc_id)] = (scope_tag, native_fulltext.body(spec.weights, texts))
        self._totals[(table, "docs")] += 1
        self._totals[(table, "tokens")] += tokens
        docs, total = self._scope_totals.get((table, scope_tag), (0, 0))
        self._scope_totals[(table, scope_tag)] = (docs + 1, total + tokens)

    def remove(self, conn: Connection, table: str, doc_id: int) -> None:
        self._native_docs.pop((table, doc_id), None)
        if self._docs.pop((table, doc_id), None) is not None:
            # Added earlier in this transaction, after any stored version was queued for removal.
            return
        self._removed.add((table, doc_id))
        # fts_totals is left alone on purpose: an FTS5 table with contentless_delete=1 never lowers its
        # row count or token totals on DELETE (measured: 3 rows, delete one, the averages record still
        # says 3), and BM25 must divide by the same numbers here.

    def flush(self, conn: Connection) -> None:
        """Write the buffered removals, then additions (inside the transaction, before COMMIT)."""
        if self._removed:
            _remove_documents(conn, sorted(self._removed))
        # The totals grow only by additions; the same statement numbers this transaction's segments.
        numbers = {
            table: _bump_totals(conn, table, self._totals[(table, "docs")], self._totals[(table, "tokens")])
            for table in sorted({table for table, _ in self._totals})
        }
        if self._docs:
            _add_documents(conn, self._docs, self.segments, numbers)
        conn.insert_rows(
            "INSERT INTO fts_scope_totals (fts_table, scope_tag, docs, tokens) VALUES ",
            [(table, tag, docs, tokens) for (table, tag), (docs, tokens) in sorted(self._scope_totals.items())],
            " ON DUPLICATE KEY UPDATE docs = docs + VALUES(docs), tokens = tokens + VALUES(tokens)",
        )
        if self.native:
            added = [(table, doc, tag, text) for (table, doc), (tag, text) in self._native_docs.items()]
            native_fulltext.write(conn, sorted(self._removed), added)
        self.discard()

    def discard(self) -> None:
        """Forget the buffered changes (the transaction rolled back, or they were flushed)."""
        self._docs.clear()
        self._native_docs.clear()
        self._removed.clear()
        self._totals.clear()
        self._scope_totals.clear()


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


def _segment_rows(keys: Sequence[tuple[SegmentKey, int]]) -> tuple[str, list[Any]]:
    """``WHERE`` text selecting exact segments by primary key (a row-value ``IN``: measured 48 ms for
    1,500 keys on seekdb, where the same keys as OR-ed conditions took 880 ms)."""
    marks = ", ".join(["(%s, %s, %s, %s)"] * len(keys))
    return (
        f"(fts_table, term, scope_tag, seg) IN ({marks})",
        [v for (table, tag, term), seg in keys for v in (table, term, tag, seg)],
    )


def _write_segments(conn: Connection, rows: Sequence[tuple[SegmentKey, int, npt.NDArray[Any]]]) -> None:
    # Rows formatted here, not value by value through the driver: the index name and scope tag are
    # [a-z0-9_] by construction, numbers are ints, only the term needs escaping (~13 ms of a 500-memory batch).
    escape = conn.raw.escape
    for table, tag in {(key[0], key[1]) for key, _, _ in rows}:
        if not (_SAFE_NAME.fullmatch(table) and _SAFE_NAME.fullmatch(tag)):
            raise ValueError("unexpected index name or scope tag")
    values = [
        f"('{table}','{tag}',{escape(term)},{int(seg)},{len(a)},{int(a['doc'][0])},{int(a['doc'][-1])},"
        f"X'{a.tobytes().hex()}')"
        for (table, tag, term), seg, a in rows
        if len(a)
    ]
    conn.insert_literal_rows(
        "INSERT INTO fts_segments (fts_table, scope_tag, term, seg, n, lo, hi, postings) VALUES ", values
    )


def _delete_segments(conn: Connection, keys: Sequence[tuple[SegmentKey, int]]) -> None:
    for start in range(0, len(keys), 1000):
        where, params = _segment_rows(keys[start : start + 1000])
        conn.query(f"DELETE FROM fts_segments WHERE {where}", params)


def _remove_documents(conn: Connection, removed: Sequence[tuple[str, int]]) -> None:
    """Take stored documents out of their segments: read the segments whose doc range covers them,
    rewrite them without those postings (an emptied segment is deleted)."""
    by_table: dict[str, list[int]] = {}
    for table, doc in removed:
        by_table.setdefault(table, []).append(doc)
    for table, docs in by_table.items():
        for start in range(0, len(docs), 500):
            chunk = docs[start : start + 500]
            marks = ", ".join(["%s"] * len(chunk))
            stored = conn.query(
                f"SELECT doc_id, scope_tag, terms FROM fts_docs WHERE fts_table = %s AND doc_id IN ({marks})",
                (table, *chunk),
            ).fetchall()
            if not stored:
                continue
            wanted: dict[str, set[str]] = {}  # scope tag -> terms of the removed documents
            for _, tag, terms in stored:
                wanted.setdefault(str(tag), set()).update(str(terms).split(" ") if terms else ())
            gone = np.array(sorted(int(row[0]) for row in stored), dtype="<i8")
            touched: list[tuple[SegmentKey, int, npt.NDArray[Any]]] = []
            emptied: list[tuple[SegmentKey, int]] = []
            for tag, term_set in wanted.items():
                terms = sorted(term_set)
                for begin in range(0, len(terms), 1000):
                    part = terms[begin : begin + 1000]
                    rows = conn.query(
                        "SELECT term, seg, postings FROM fts_segments WHERE fts_table = %s AND scope_tag = %s"
                        f" AND term IN ({', '.join(['%s'] * len(part))}) AND lo <= %s AND hi >= %s",
                        (table, tag, *part, int(gone[-1]), int(gone[0])),
                    ).fetchall()
                    for term, seg, blob in rows:
                        array = unpack(blob)
                        kept = array[~np.isin(array["doc"], gone)]
                        if len(kept) == len(array):
                            continue
                        key = (table, tag, str(term))
                        if len(kept):
                            touched.append((key, int(seg), kept))
                        emptied.append((key, int(seg)))
            if emptied:
                _delete_segments(conn, emptied)
            _write_segments(conn, touched)
            conn.query(f"DELETE FROM fts_docs WHERE fts_table = %s AND doc_id IN ({marks})", (table, *chunk))


def _bump_totals(conn: Connection, table: str, docs: int, tokens: int) -> int:
    """Add to ``table``'s totals and take the next number of its segment sequence, in one upsert (+ read):
    segment keys never collide, whichever process wrote them."""
    conn.query(
        "INSERT INTO fts_totals (fts_table, docs, tokens, seq) VALUES (%s, %s, %s, 1)"
        " ON DUPLICATE KEY UPDATE docs = docs + VALUES(docs), tokens = tokens + VALUES(tokens), seq = seq + 1",
        (table, docs, tokens),
    )
    row = conn.query("SELECT seq FROM fts_totals WHERE fts_table = %s", (table,)).fetchone()
    assert row is not None
    return int(row[0])


def _add_documents(
    conn: Connection,
    docs: dict[tuple[str, int], tuple[str, int, tuple[Counter[str], ...]]],
    segments: SegmentCounts,
    numbers: dict[str, int],
) -> None:
    """One new segment per touched (index, scope tag, term), written without reading anything back; a
    term known to have reached ``MAX_SEGMENTS`` open segments is compacted here into full segments and one
    open rest."""
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
    grouped = {key: everything[slice(*by_slot[slot])] for key, slot in slots.items()}
    compact = segments.due(grouped)
    for table in sorted({key[0] for key in compact} - set(numbers)):
        numbers[table] = _bump_totals(conn, table, 0, 0)
    old: dict[SegmentKey, list[npt.NDArray[Any]]] = {}
    if compact:
        by_group: dict[tuple[str, str], list[str]] = {}
        for table, tag, term in compact:
            by_group.setdefault((table, tag), []).append(term)
        for (table, tag), terms in by_group.items():
            for start in range(0, len(terms), 500):
                part = terms[start : start + 500]
                where = f"fts_table = %s AND scope_tag = %s AND term IN ({', '.join(['%s'] * len(part))}) AND n < %s"
                params = (table, tag, *part, SEGMENT_POSTINGS)
                rows = conn.query(f"SELECT term, postings FROM fts_segments WHERE {where}", params)
                for term, blob in rows.fetchall():
                    old.setdefault((table, tag, str(term)), []).append(unpack(blob))
                # By the key's prefix, not by exact keys: measured 97 ms per 1,000 exact keys.
                conn.query(f"DELETE FROM fts_segments WHERE {where}", params)
    written: list[tuple[SegmentKey, int, npt.NDArray[Any]]] = []
    after: dict[SegmentKey, int] = {}
    for key in set(grouped) | set(compact):
        array = grouped[key] if key in grouped else pack(())
        first = numbers[key[0]] * SEGMENTS_PER_WRITE
        if key not in compact:
            written.append((key, first, array))
            continue
        array = np.sort(np.concatenate([*old.get(key, ()), array]), order="doc")
        pieces = split(array)
        written.extend((key, first + i, piece) for i, piece in enumerate(pieces))
        after[key] = int(bool(pieces) and len(pieces[-1]) < SEGMENT_POSTINGS)
    _write_segments(conn, written)
    segments.written((key for key in grouped if key not in compact), after)
    conn.insert_rows(
        "INSERT INTO fts_docs (fts_table, doc_id, scope_tag, ntokens, terms) VALUES ",
        [
            (table, doc, tag, tokens, " ".join(tf[0].keys() if len(tf) == 1 else set(tf[0]).union(tf[1])))
            for (table, doc), (tag, tokens, tf) in docs.items()
        ],
    )


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


def search(
    conn: Connection,
    table: str,
    scope_tag: str,
    terms: Sequence[str],
    limit: int,
    window: Window = "rank",
    window_size: int = 0,
    segments: SegmentCounts | None = None,
) -> list[tuple[float, int]]:
    """(score, doc_id) of the Scope's documents matching any term, best first (ties: lower doc_id first).

    ``window`` mirrors the SQLite adapter's cut when ranking every match is unaffordable: ``newest``
    ranks only the ``limit`` highest doc ids, ``first`` only the ``window_size`` lowest.
    """
    spec = TABLES[table]
    query = list(dict.fromkeys(posting_term(t) for t in terms if t))
    if not query or limit < 1:
        return []
    marks = ", ".join(["%s"] * len(query))
    # One round trip for every input of the formula, all of them the Scope's own: its totals row, and its
    # segments of the query terms (their sizes add up to n(t)).
    rows = conn.query(
        "SELECT NULL, docs, tokens, NULL FROM fts_scope_totals WHERE fts_table = %s AND scope_tag = %s UNION ALL"
        " SELECT term, n, 0, postings FROM fts_segments"
        f" WHERE fts_table = %s AND term IN ({marks}) AND scope_tag = %s",
        (table, scope_tag, table, *query, scope_tag),
    ).fetchall()
    n_rows = n_tokens = 0
    counts: Counter[str] = Counter()
    parts: dict[str, list[npt.NDArray[Any]]] = {}
    open_segments: Counter[str] = Counter()
    for term, n, tokens, blob in rows:
        if term is None:
            n_rows, n_tokens = int(n), int(tokens)
            continue
        counts[str(term)] += int(n)
        if blob is not None:
            parts.setdefault(str(term), []).append(unpack(blob))
            open_segments[str(term)] += int(n) < SEGMENT_POSTINGS
    if segments is not None:
        for term in parts:
            segments.seen((table, scope_tag, term), open_segments[term])
    if not n_rows or not parts:
        return []
    arrays = {term: a[0] if len(a) == 1 else np.concatenate(a) for term, a in parts.items()}
    docs = np.unique(np.concatenate([a["doc"] for a in arrays.values()]))
    if window == "newest":
        docs = docs[-limit:]
    elif window == "first":
        docs = docs[:window_size]
    avgdl = n_tokens / n_rows
    size = np.zeros(len(docs), dtype=np.float64)
    located: dict[str, tuple[npt.NDArray[Any], npt.NDArray[Any]]] = {}
    for term, array in arrays.items():
        at = np.searchsorted(docs, array["doc"])
        inside = at < len(docs)
        inside[inside] = docs[at[inside]] == array["doc"][inside]
        located[term] = (at[inside], array[inside])
        size[at[inside]] = array["len"][inside]
    weights = (*spec.weights, 0.0)[:2]
    # Same float64 operations, in the same order, as FTS5's per-phrase loop (fts5_aux.c): a document
    # without the term adds idf·0/… = 0.0, which leaves its sum unchanged.
    norm = K1 * ((1 - B) + (B * size) / avgdl)
    score = np.zeros(len(docs), dtype=np.float64)
    for term in query:
        idf = _idf(n_rows, counts.get(term, 0))
        freq = np.zeros(len(docs), dtype=np.float64)
        if term in located:
            at, found = located[term]
            freq[at] = found["tf1"].astype(np.float64) * weights[0] + found["tf2"].astype(np.float64) * weights[1]
        score += idf * ((freq * (K1 + 1.0)) / (freq + norm))
    order = np.lexsort((docs, -score))[:limit]
    return [(float(score[i]), int(docs[i])) for i in order]


def _weighted(weights: tuple[float, ...], tf: tuple[int, int]) -> float:
    freq = 0.0
    for weight, count in zip(weights, tf, strict=False):
        # FTS5 adds the column weight once per phrase instance.
        for _ in range(count):
            freq += weight
    return freq


def _idf(n_rows: int, n_hits: int) -> float:
    idf = math.log((0.5 + n_rows - n_hits) / (0.5 + n_hits))
    return 1e-6 if idf <= 0.0 else idf


def term_documents(conn: Connection, table: str, scope_tag: str, terms: Sequence[str]) -> dict[str, int]:
    """Documents of one Scope per term, like ``fts5vocab``'s ``doc`` on the Scope's own FTS5 table."""
    query = list(dict.fromkeys(posting_term(t) for t in terms if t))
    if not query:
        return {}
    marks = ", ".join(["%s"] * len(query))
    rows: Any = conn.query(
        f"SELECT term, SUM(n) FROM fts_segments WHERE fts_table = %s AND term IN ({marks}) AND scope_tag = %s"
        " GROUP BY term",
        (table, *query, scope_tag),
    ).fetchall()
    return {str(term): int(count) for term, count in rows}


def pack_legacy_postings(conn: Connection) -> None:
    """Migration 7: one row per posting (``fts_postings``) becomes one packed segment per term and Scope,
    and each document records its terms (what a removal must rewrite)."""
    rows = conn.query(
        "SELECT p.fts_table, d.scope_tag, p.term, p.doc_id, p.tf1, p.tf2, d.ntokens FROM fts_postings p"
        " JOIN fts_docs d ON d.fts_table = p.fts_table AND d.doc_id = p.doc_id"
    ).fetchall()
    grouped: dict[SegmentKey, list[tuple[int, int, int, int]]] = {}
    terms: dict[tuple[str, int], list[str]] = {}
    for table, tag, term, doc, tf1, tf2, tokens in rows:
        grouped.setdefault((str(table), str(tag), str(term)), []).append((int(doc), int(tf1), int(tf2), int(tokens)))
        terms.setdefault((str(table), int(doc)), []).append(str(term))
    written = [(key, i, piece) for key, postings in grouped.items() for i, piece in enumerate(split(pack(postings)))]
    for start in range(0, len(written), 1000):
        _write_segments(conn, written[start : start + 1000])
    with conn.raw.cursor() as cur:
        cur.executemany(
            "UPDATE fts_docs SET terms = %s WHERE fts_table = %s AND doc_id = %s",
            [(" ".join(ts), table, doc) for (table, doc), ts in terms.items()],
        )
