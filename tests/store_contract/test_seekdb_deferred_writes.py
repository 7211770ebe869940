"""A writer's deferred statements on embedded seekdb (``dialect.Connection.defer_writes``): sent in order by a
worker thread, seen by the next read, and never lost when one fails: its error is raised once, the statements
after it are not sent, and the transaction rolls back whole."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from powercontext.store.base import NewMemory
from powercontext.store.core.driver import sqlite
from powercontext.text.tokenize import query_terms
from tests.seekdb_support import fresh_location, open_seekdb, require_seekdb

if TYPE_CHECKING:
    from powercontext.store.oceanbase.dialect import Connection

_ROW = "INSERT INTO scopes (scope_id, title, context_references, created_at, updated_at) VALUES "
_NOW = "2026-12-07T00:00:00Z"


@pytest.fixture
def writer() -> Iterator[Connection]:
    require_seekdb()
    from powercontext.store.oceanbase.dialect import Connection
    from powercontext.store.oceanbase.engine import connect

    where = fresh_location("deferred_writes")
    open_seekdb(where).close()  # the schema
    conn = Connection(connect(where, where.database))
    conn.raw.begin()
    try:
        yield conn
    finally:
        conn.close()


def _insert(conn: Connection, *scope_ids: str) -> None:
    conn.insert_rows(_ROW, [(s, "t", "[]", _NOW, _NOW) for s in scope_ids])


def _stored(conn: Connection) -> list[str]:
    rows = conn.query("SELECT scope_id FROM scopes ORDER BY scope_id").fetchall()
    return [str(row[0]) for row in rows]


def test_the_next_read_sees_every_deferred_statement_in_order(writer: Connection) -> None:
    writer.defer_writes()
    for n in range(20):
        _insert(writer, f"s{n:02d}")
    # Each INSERT depends on nothing, but a DELETE sent after them must find them all.
    writer.query("DELETE FROM scopes WHERE scope_id < 's10'")
    _insert(writer, "s00")
    assert _stored(writer) == ["s00", *(f"s{n}" for n in range(10, 20))]
    writer.settle()
    writer.raw.commit()
    assert _stored(writer) == ["s00", *(f"s{n}" for n in range(10, 20))]


def test_a_failed_deferred_statement_is_raised_once_and_the_later_ones_are_not_sent(writer: Connection) -> None:
    writer.defer_writes()
    _insert(writer, "a")
    _insert(writer, "a")  # duplicate key: fails on the worker thread
    _insert(writer, "b")
    with pytest.raises(sqlite.IntegrityError):
        writer.settle()
    writer.settle()  # raised once, not again
    assert _stored(writer) == ["a"]  # "b" came after the failure: not sent
    writer.raw.rollback()
    assert _stored(writer) == []


def test_a_read_after_a_failed_deferred_statement_raises_that_error(writer: Connection) -> None:
    writer.defer_writes()
    _insert(writer, "a")
    _insert(writer, "a")
    with pytest.raises(sqlite.IntegrityError):
        _stored(writer)
    writer.settle(discard=True)
    writer.raw.rollback()
    assert _stored(writer) == []


def test_batches_written_with_deferred_statements_are_whole_and_searchable() -> None:
    require_seekdb()
    where = fresh_location("deferred_batches")
    store = open_seekdb(where)
    try:
        store.create_scope("s", "t", [])
        for start in range(0, 1500, 500):
            texts = [f"note {n} about the ledger export number{n}" for n in range(start, start + 500)]
            store.create_memories("s", [NewMemory(text, "fact", ()) for text in texts])
        # A single write (not deferred) after the batches numbers its segment after theirs.
        store.create_memories("s", [NewMemory("one more ledger note, number9999", "fact", ())])
        active, holding = store.term_statistics("s", query_terms("ledger"))
        assert active == 1501 and list(holding.values()) == [1501]
        assert [h.record.text for h in store.search_text("s", query_terms("number9999"), 5)] == [
            "one more ledger note, number9999"
        ]
        hits = store.search_text("s", query_terms("number1234"), 5)
        assert [h.record.text for h in hits] == ["note 1234 about the ledger export number1234"]
        assert len(store.search_text("s", query_terms("ledger"), 2000)) == 1501
    finally:
        store.close()
