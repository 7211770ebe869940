"""A Scope's FTS5 table read as the inputs of the shared BM25 (store/core/bm25.py).

FTS5's own ``bm25()`` has FTS5's IDF built in, so the SQLite store reads the formula's inputs from the table and
ranks with the function the OceanBase store uses too: ``N`` and the per-column token totals from FTS5's averages
record, each query term's instances (document, column) from an ``fts5vocab`` ``instance`` table, and each
matching document's token count from the table's ``docsize`` rows. The vocabulary table is created in the
connection's ``temp`` schema, so reading never writes to the database file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from powercontext.store.core.bm25 import POSTING, Postings

_AVERAGES_ROWID: Final = 1  # FTS5 keeps (rows, tokens per column) as varints in this %_data row


def read_postings(conn: Any, table: str, columns: Sequence[str], terms: Sequence[str]) -> Postings:
    """The inputs of BM25 for ``terms`` over ``table``'s text ``columns`` (its first column is the scope tag).

    Raises ``OperationalError`` ("no such table") when the Scope never indexed anything there.
    """
    averages = conn.execute(f"SELECT block FROM {table}_data WHERE id = ?", (_AVERAGES_ROWID,)).fetchone()
    if averages is None:
        return Postings(0, 0, {}, {})
    n_rows, *column_tokens = _varints(averages[0])
    vocab = temp_vocab(conn, table, "instance")
    marks = ",".join("?" * len(terms))
    tf2 = "SUM(v.col = ?)" if len(columns) > 1 else "0"
    # Instances grouped per (term, document): the term's frequency in each text column, and the document's size.
    rows = conn.execute(
        f"SELECT v.term, v.doc, SUM(v.col = ?), {tf2}, d.sz FROM {vocab} v"
        f" JOIN {table}_docsize d ON d.id = v.doc"
        f" WHERE v.term IN ({marks}) AND v.col IN ({','.join('?' * len(columns))}) GROUP BY v.term, v.doc",
        [columns[0], *columns[1:2], *terms, *columns],
    ).fetchall()
    grouped: dict[str, list[tuple[int, int, int, int]]] = {}
    for term, doc, first, second, size in rows:
        grouped.setdefault(term, []).append((doc, first, second, _size(size)))
    arrays = {term: np.array(found, dtype=POSTING) for term, found in grouped.items()}
    counts = {term: len(found) for term, found in grouped.items()}
    return Postings(n_rows, sum(column_tokens), counts, arrays)


def window_postings(
    conn: Any, table: str, terms: Sequence[str], bodies: Mapping[int, Sequence[str]], counts: Mapping[str, int]
) -> Postings:
    """The inputs of BM25 for ``terms`` over only the documents ``bodies`` (doc id -> its indexed terms).

    A term in tens of thousands of a Scope's memories has as many postings, and reading them all through
    ``fts5vocab`` costs ~1 µs each (seconds per prepare at a million memories, issue 39). For a window of a
    few documents the term frequencies come from the terms they were indexed with instead, their sizes from
    ``docsize`` by rowid, and ``n(t)`` from ``counts`` (the Scope's ``fts_term_docs``): the same inputs.
    """
    averages = conn.execute(f"SELECT block FROM {table}_data WHERE id = ?", (_AVERAGES_ROWID,)).fetchone()
    if averages is None or not bodies:
        return Postings(0, 0, {}, {})
    n_rows, *column_tokens = _varints(averages[0])
    marks = ",".join("?" * len(bodies))
    sizes = dict(conn.execute(f"SELECT id, sz FROM {table}_docsize WHERE id IN ({marks})", list(bodies)))
    wanted = set(terms)
    grouped: dict[str, list[tuple[int, int, int, int]]] = {}
    for doc in sorted(bodies):
        if doc not in sizes:
            continue
        for term, tf in Counter(t for t in bodies[doc] if t in wanted).items():
            grouped.setdefault(term, []).append((doc, tf, 0, _size(sizes[doc])))
    arrays = {term: np.array(found, dtype=POSTING) for term, found in grouped.items()}
    return Postings(n_rows, sum(column_tokens), {t: counts.get(t, 0) for t in grouped}, arrays)


def temp_vocab(conn: Any, table: str, kind: str) -> str:
    """The connection's ``temp`` ``fts5vocab`` table of ``kind`` (``row``, ``instance``) over ``table``, created
    on its first use; the database file is not touched."""
    name = f"{table}_{'instances' if kind == 'instance' else 'rows'}"
    if conn.execute("SELECT 1 FROM temp.sqlite_master WHERE name = ?", (name,)).fetchone() is not None:
        return f"temp.{name}"
    # Readers run with query_only, which refuses even a temp-schema CREATE.
    (query_only,) = conn.execute("PRAGMA query_only").fetchone()
    conn.execute("PRAGMA query_only = OFF")
    try:
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{name} USING fts5vocab(main, {table}, {kind})")
    finally:
        conn.execute(f"PRAGMA query_only = {'ON' if query_only else 'OFF'}")
    return f"temp.{name}"


def _size(blob: bytes) -> int:
    """A ``docsize`` record's total tokens: one varint per column (each below 128 in one byte, the usual case)."""
    if max(blob, default=0) < 0x80:
        return sum(blob)
    return sum(_varints(blob))


def _varints(blob: bytes) -> list[int]:
    """SQLite's big-endian base-128 varints (FTS5's record format), all of them in order."""
    values: list[int] = []
    value = 0
    length = 0
    for byte in blob:
        length += 1
        if length == 9:  # the ninth byte contributes all eight bits
            values.append((value << 8) | byte)
            value = length = 0
            continue
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            values.append(value)
            value = length = 0
    return values
