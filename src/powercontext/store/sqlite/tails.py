"""Tail rows of the SQLite packed index (packed.py): a small write's postings, every term of one index and Scope
in one row, as FTS5 appends one segment per transaction.

Packed postings made single creates ~4x slower than FTS5 (issue 39): a create of ~30 distinct terms wrote ~30
segment rows, each with an entry at its own place in the term index, and every few writes merged a term's open
segments: ~50 dirty 4 KB pages per create, every one written to the WAL and checkpointed into the file. A tail
row is one row and one index entry per (index, Scope) of a small transaction. A search reads the Scope's tail
rows with its segments (at most ``MAX_TAIL_ROWS``, a few KB); the write that would add one more moves every tail
row of that index and Scope into the per-term segments at once, as one batch of that many writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from powercontext.store.core.packed import SegmentKey, unpack

TAIL_SCHEMA: Final = """
CREATE TABLE fts_tail (
  id INTEGER PRIMARY KEY,
  fts_table TEXT NOT NULL,
  scope_tag TEXT NOT NULL,
  terms TEXT NOT NULL,
  runs BLOB NOT NULL,
  postings BLOB NOT NULL
);
CREATE INDEX fts_tail_by_scope ON fts_tail (fts_table, scope_tag);
"""
# Tail rows one index and Scope may hold: a search reads them all, a write past them moves them to segments.
MAX_TAIL_ROWS: Final = 32
# A write with more postings than this for one index and Scope goes to segments directly (a batch).
TAIL_POSTINGS: Final = 2048

Group = tuple[str, str]  # (index, scope tag)


def _encode(arrays: dict[str, npt.NDArray[Any]]) -> tuple[str, bytes, bytes]:
    """(terms space-separated, int64 run offsets, postings): term i's postings are run i, in doc order."""
    terms = list(arrays)
    offsets = np.zeros(len(terms) + 1, dtype="<i8")
    np.cumsum([len(arrays[t]) for t in terms], out=offsets[1:])
    return " ".join(terms), offsets.tobytes(), b"".join(arrays[t].tobytes() for t in terms)


def _decode(terms: str, runs: bytes, postings: bytes) -> dict[str, npt.NDArray[Any]]:
    offsets = np.frombuffer(runs, dtype="<i8").tolist()
    array = unpack(postings)
    return {term: array[offsets[i] : offsets[i + 1]] for i, term in enumerate(terms.split(" "))}


def _rows(conn: Any, group: Group) -> list[tuple[int, dict[str, npt.NDArray[Any]]]]:
    rows = conn.execute(
        "SELECT id, terms, runs, postings FROM fts_tail WHERE fts_table = ? AND scope_tag = ? ORDER BY id", group
    ).fetchall()
    return [(int(row_id), _decode(terms, runs, postings)) for row_id, terms, runs, postings in rows]


def read(conn: Any, group: Group, wanted: Iterable[str]) -> dict[str, list[npt.NDArray[Any]]]:
    """The ``wanted`` terms' postings in the group's tail rows, one array per row holding the term, oldest first."""
    keep = set(wanted)
    found: dict[str, list[npt.NDArray[Any]]] = {}
    rows = conn.execute("SELECT terms, runs, postings FROM fts_tail WHERE fts_table = ? AND scope_tag = ?", group)
    for terms, runs, postings in rows:
        held = [(i, term) for i, term in enumerate(terms.split(" ")) if term in keep]
        if not held:
            continue
        offsets, array = np.frombuffer(runs, dtype="<i8"), unpack(postings)
        for i, term in held:
            found.setdefault(term, []).append(array[int(offsets[i]) : int(offsets[i + 1])])
    return found


def write(conn: Any, grouped: dict[SegmentKey, npt.NDArray[Any]]) -> dict[SegmentKey, npt.NDArray[Any]]:
    """Write each small (index, Scope) group of a transaction's postings as one tail row; return the postings that
    go to segments instead: big groups', and, for a group whose tail is full, its tail rows' with its own."""
    by_group: dict[Group, dict[str, npt.NDArray[Any]]] = {}
    for (index, tag, term), array in grouped.items():
        by_group.setdefault((index, tag), {})[term] = array
    to_segments: dict[SegmentKey, npt.NDArray[Any]] = {}
    for group, arrays in by_group.items():
        if sum(len(a) for a in arrays.values()) > TAIL_POSTINGS:
            to_segments.update({(*group, term): array for term, array in arrays.items()})
            continue
        (held,) = conn.execute("SELECT COUNT(*) FROM fts_tail WHERE fts_table = ? AND scope_tag = ?", group).fetchone()
        if held < MAX_TAIL_ROWS:
            conn.execute(
                "INSERT INTO fts_tail (fts_table, scope_tag, terms, runs, postings) VALUES (?, ?, ?, ?, ?)",
                (*group, *_encode(arrays)),
            )
            continue
        to_segments.update(_fold(conn, group, arrays))
    return to_segments


def _fold(conn: Any, group: Group, arrays: dict[str, npt.NDArray[Any]]) -> dict[SegmentKey, npt.NDArray[Any]]:
    """The group's tail rows (deleted) and ``arrays``, per term in doc order."""
    pieces: dict[str, list[bytes]] = {}
    rows = _rows(conn, group)
    for _, held in rows:
        for term, array in held.items():
            pieces.setdefault(term, []).append(array.tobytes())
    for term, array in arrays.items():
        pieces.setdefault(term, []).append(array.tobytes())
    conn.executemany("DELETE FROM fts_tail WHERE id = ?", [(row_id,) for row_id, _ in rows])
    folded: dict[SegmentKey, npt.NDArray[Any]] = {}
    for term, parts in pieces.items():
        array = unpack(b"".join(parts))
        folded[(*group, term)] = array[np.argsort(array["doc"], kind="stable")]
    return folded


def remove(conn: Any, group: Group, gone: npt.NDArray[Any]) -> None:
    """Take the documents ``gone`` (sorted ids) out of the group's tail rows."""
    for row_id, held in _rows(conn, group):
        kept = {term: array[~np.isin(array["doc"], gone)] for term, array in held.items()}
        kept = {term: array for term, array in kept.items() if len(array)}
        if sum(map(len, kept.values())) == sum(map(len, held.values())):
            continue
        if not kept:
            conn.execute("DELETE FROM fts_tail WHERE id = ?", (row_id,))
            continue
        conn.execute("UPDATE fts_tail SET terms = ?, runs = ?, postings = ? WHERE id = ?", (*_encode(kept), row_id))
