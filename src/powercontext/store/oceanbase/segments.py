"""Writing packed postings: new segments per write transaction, removals, compaction, and the migration from
one row per posting (fulltext.py explains the scheme)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import numpy.typing as npt

from powercontext.store.core.packed import in_doc_order
from powercontext.store.core.segment_codec import encode, is_records
from powercontext.store.oceanbase.postings import (
    SEGMENT_POSTINGS,
    SEGMENTS_PER_WRITE,
    SegmentCounts,
    SegmentKey,
    pack,
    split,
    unpack,
)

if TYPE_CHECKING:
    from powercontext.store.oceanbase.dialect import Connection

_SAFE_NAME: Final = re.compile(r"[a-z0-9_]+")


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
        f"X'{encode(a).hex()}')"
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


def remove_documents(conn: Connection, removed: Sequence[tuple[str, int]]) -> None:
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


def bump_totals(conn: Connection, table: str, docs: int, tokens: int) -> int:
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


def add_totals(conn: Connection, table: str, docs: int, tokens: int) -> None:
    """Add to ``table``'s totals without numbering a segment (the number was reserved: ``bump_totals``)."""
    conn.insert_rows(
        "INSERT INTO fts_totals (fts_table, docs, tokens, seq) VALUES ",
        [(table, docs, tokens, 0)],
        " ON DUPLICATE KEY UPDATE docs = docs + VALUES(docs), tokens = tokens + VALUES(tokens)",
    )


def add_documents(
    conn: Connection,
    docs: dict[tuple[str, int], tuple[str, int, tuple[Counter[str], ...]]],
    grouped: dict[SegmentKey, npt.NDArray[Any]],
    segments: SegmentCounts,
    numbers: dict[str, int],
) -> None:
    """One new segment per touched (index, scope tag, term) of ``grouped`` (``group_postings(docs)``), written
    without reading anything back; a term known to have reached ``MAX_SEGMENTS`` open segments is compacted
    here into full segments and one open rest."""
    compact = segments.due(grouped)
    for table in sorted({key[0] for key in compact} - set(numbers)):
        numbers[table] = bump_totals(conn, table, 0, 0)
    old = _take_open_segments(conn, compact) if compact else {}
    written: list[tuple[SegmentKey, int, npt.NDArray[Any]]] = []
    after: dict[SegmentKey, int] = {}
    for key in set(grouped) | set(compact):
        array = grouped[key] if key in grouped else pack(())
        first = numbers[key[0]] * SEGMENTS_PER_WRITE
        if key not in compact:
            written.append((key, first, array))
            continue
        array = in_doc_order(np.concatenate([*old.get(key, ()), array]))
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


def _take_open_segments(conn: Connection, compact: Iterable[SegmentKey]) -> dict[SegmentKey, list[npt.NDArray[Any]]]:
    """Read and delete the open segments of the terms to compact (their postings are rewritten by the caller)."""
    old: dict[SegmentKey, list[npt.NDArray[Any]]] = {}
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
    return old


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


def segments_in_columns(conn: Connection) -> None:
    """Migration 16: every segment stored as records rewritten in columns (core/segment_codec.py), a page of
    keys at a time in key order. Idempotent: a run cut short converts the rest when it runs again."""
    for (table,) in conn.query("SELECT DISTINCT fts_table FROM fts_segments").fetchall():
        after: tuple[Any, ...] = ("", "", -1)
        while rows := conn.query(
            "SELECT term, scope_tag, seg, postings FROM fts_segments WHERE fts_table = %s"
            " AND (term, scope_tag, seg) > (%s, %s, %s) ORDER BY term, scope_tag, seg LIMIT 500",
            (table, *after),
        ).fetchall():
            after = tuple(rows[-1][:3])
            changed = [
                (encode(unpack(bytes(blob))), table, term, tag, seg)
                for term, tag, seg, blob in rows
                if is_records(bytes(blob))
            ]
            if changed:
                with conn.raw.cursor() as cur:
                    cur.executemany(
                        "UPDATE fts_segments SET postings = %s WHERE fts_table = %s AND term = %s AND scope_tag = %s"
                        " AND seg = %s",
                        changed,
                    )
            conn.raw.commit()
