"""One read transaction around the statements that must see the same state of a SQLite store."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def one_snapshot(conn: Any) -> Iterator[None]:
    """The statements inside read one state of the database. A reader runs in autocommit, one snapshot per
    statement; what is read in two statements (a term's segments and its tail rows, packed.py; a vector matrix's
    generation and its rows, store.py) could otherwise come from two states: a write that moves the tail rows
    into segments between a search's two reads hid every posting moved (a prepare during batch writes then found
    nothing). Inside a transaction already (a write's), its own snapshot serves."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN")  # deferred: a read transaction from the first SELECT on; no lock a writer waits for
    try:
        yield
    finally:
        if conn.in_transaction:  # an I/O error may have ended it already: the error raised stays that one
            conn.execute("COMMIT")
