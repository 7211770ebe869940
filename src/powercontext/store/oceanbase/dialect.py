"""A SQLite-flavoured connection over the OceanBase MySQL-mode protocol.

The store logic shared with the SQLite adapter speaks SQLite's SQL: ``?`` placeholders and
``INSERT … ON CONFLICT … DO UPDATE SET x = excluded.x``; this module translates both into MySQL syntax.
Full-text index writes never pass through here as SQL: the shared code calls the store's ``FullTextIndex``
(``fulltext.FtsWriter``). Driver errors surface as the SQLite driver's ``IntegrityError``/``OperationalError``,
so shared code catches one error family on every backend.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from decimal import Decimal
from functools import lru_cache
from typing import Any

import pymysql
from pymysql.cursors import RE_INSERT_VALUES

from powercontext.store.core.driver import sqlite

_ON_CONFLICT = re.compile(r"ON CONFLICT \([^)]*\) DO UPDATE SET", re.IGNORECASE)
_EXCLUDED = re.compile(r"\bexcluded\.(\w+)")

@lru_cache(maxsize=1024)
def translate(sql: str) -> str:
    """SQLite statement text → MySQL-mode text (placeholders, upserts)."""
    out = sql.replace("%", "%%").replace("?", "%s")
    out = _ON_CONFLICT.sub("ON DUPLICATE KEY UPDATE", out)
    return _EXCLUDED.sub(r"VALUES(\1)", out)


def _plain(value: Any) -> Any:
    # SUM() and friends come back as Decimal in MySQL; SQLite code expects int (or float).
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def _row(raw: tuple[Any, ...]) -> tuple[Any, ...]:
    for value in raw:
        if isinstance(value, Decimal):
            return tuple(_plain(v) for v in raw)
    return raw


class Result:
    """The part of ``sqlite3.Cursor`` the shared store code uses."""

    def __init__(self, rows: Sequence[tuple[Any, ...]], lastrowid: int | None) -> None:
        self._rows = rows
        self._next = 0
        self.lastrowid = lastrowid

    def fetchone(self) -> tuple[Any, ...] | None:
        if self._next >= len(self._rows):
            return None
        row = self._rows[self._next]
        self._next += 1
        return _row(row)

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows = [_row(r) for r in self._rows[self._next :]]
        self._next = len(self._rows)
        return rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.fetchall())


def driver_error(exc: pymysql.MySQLError) -> Exception:
    """The SQLite driver's error class for a MySQL-protocol error, so shared ``except`` clauses apply."""
    if isinstance(exc, pymysql.IntegrityError):
        return sqlite.IntegrityError(str(exc))  # type: ignore[no-any-return]
    return sqlite.OperationalError(str(exc))  # type: ignore[no-any-return]


# Statement size cap for ``insert_rows`` (pymysql's own multi-row cap is 1,024,000 bytes).
MAX_STATEMENT_BYTES = 1_000_000


def _literal(raw: Any, value: Any) -> str:
    if type(value) is int:
        return str(value)
    if value is None:
        return "NULL"
    return str(raw.escape(value))  # str: quoted and escaped; bytes: X'hex'


class Connection:
    """One pymysql connection with SQLite-style ``execute``/``executemany``.

    A reader may also hold a session of the embedded engine's C client (``native``, see
    ``engine.native_reader``) with the heads of the statements it may serve (``text_reads``): statements
    that select only text and numbers, named by their text up to the first table. Every other statement, and
    every statement of a connection without one, goes through pymysql.

    A writer may also defer the statements that answer nothing (``defer_writes``): one worker thread sends
    them in order while the caller prepares the next ones, and any other statement waits for them first, so
    the session sees them in the order they were written.
    """

    def __init__(
        self,
        raw: Any,
        native: Any | None = None,
        text_reads: tuple[str, ...] = (),
    ) -> None:
        self.raw = raw
        self._native = native
        self._text_reads = text_reads
        self._sender: ThreadPoolExecutor | None = None
        self._deferring = False
        self._sent: list[Future[None]] = []
        self._failed: Exception | None = None

    def defer_writes(self) -> None:
        """From now until ``settle``, statements that answer nothing are sent by a worker thread.

        The embedded engine answers on its own threads, outside the GIL: a 500-memory batch spends ~60 ms
        waiting for it and ~80 ms building rows in Python, and deferring lets the two overlap. An error is
        raised by the next statement that waits, or by ``settle``, never lost; the statements after a failed
        one are not sent.
        """
        if self._sender is None:
            self._sender = ThreadPoolExecutor(1, thread_name_prefix="powercontext-writes")
        self._deferring = True

    def settle(self, *, discard: bool = False) -> None:
        """Wait for every deferred statement and stop deferring; raise the first one's error unless
        ``discard`` (the transaction is being rolled back anyway)."""
        self._deferring = False
        try:
            self._wait()
        except Exception:
            if not discard:
                raise

    def _wait(self) -> None:
        sent, self._sent = self._sent, []
        for future in sent:
            future.result()
        failed, self._failed = self._failed, None
        if failed is not None:
            raise failed

    def _send(self, sql: str) -> None:
        if self._failed is None:
            try:
                self._run(sql)
            except Exception as exc:
                self._failed = exc

    def close(self) -> None:
        self.settle(discard=True)
        if self._sender is not None:
            self._sender.shutdown()
            self._sender = None
        native, self._native = self._native, None
        if native is not None:
            with contextlib.suppress(RuntimeError):
                native.close()
        if self.raw.open:
            self.raw.close()

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Result:
        native = self._native
        if native is not None and sql.lstrip().startswith(self._text_reads):
            return self._read_native(native, translate(sql), params)
        return self.query(translate(sql), params)

    def query(self, sql: str, params: Sequence[Any] = ()) -> Result:
        """Run MySQL-mode text as is (no translation)."""
        if self._sent:
            self._wait()
        try:
            with self.raw.cursor() as cur:
                cur.execute(sql, tuple(params) if params else None)
                rows = cur.fetchall() if cur.description is not None else ()
                return Result(rows, cur.lastrowid)
        except pymysql.MySQLError as exc:
            raise driver_error(exc) from exc

    def _read_native(self, native: Any, sql: str, params: Sequence[Any]) -> Result:
        # Parameters become literals escaped by the pymysql session, which knows the server's quoting mode;
        # without parameters the text is sent as pymysql would send it.
        text = sql % tuple(_literal(self.raw, v) for v in params) if params else sql
        try:
            cursor = native.cursor()
            try:
                cursor.execute(text)
                rows = cursor.fetchall()
            finally:
                cursor.close()
        except RuntimeError:  # SeekdbError, or the binding's own (a lost session, an undecodable value)
            # The pymysql session serves this statement, and this connection's reads from now on: a broken
            # C-client session costs speed, not the request. A statement that is itself wrong fails there.
            self._native = None
            with contextlib.suppress(RuntimeError):
                native.close()
            return self.query(sql, params)
        return Result(rows, None)

    def insert_rows(self, head: str, rows: Sequence[Sequence[Any]], tail: str = "", row: str = "") -> None:
        """``head`` (``INSERT INTO t (a, b) VALUES``) with many rows, as few statements as the size cap allows.

        ``row`` is the MySQL-mode text of one row (``(%s, %s)``, literals allowed); by default every
        column is a placeholder. pymysql's ``executemany`` escapes each value through its generic
        converter: ~2 µs per value, ~50 ms of a 500-memory batch, where this takes a fraction.
        """
        raw = self.raw
        texts = []
        for values in rows:
            literals = [_literal(raw, v) for v in values]
            texts.append(row % tuple(literals) if row else "(" + ",".join(literals) + ")")
        self.insert_literal_rows(head, texts, tail)

    def insert_literal_rows(self, head: str, texts: Sequence[str], tail: str = "") -> None:
        """``head`` with rows already written as SQL text (``(1,'a')``), cut at the statement size cap."""
        chunk: list[str] = []
        size = len(head) + len(tail)
        for text in texts:
            if chunk and size + len(text) + 1 > MAX_STATEMENT_BYTES:
                self._run_or_send(head + ",".join(chunk) + tail)
                chunk, size = [], len(head) + len(tail)
            chunk.append(text)
            size += len(text) + 1
        if chunk:
            self._run_or_send(head + ",".join(chunk) + tail)

    def _run_or_send(self, sql: str) -> None:
        if self._deferring and self._sender is not None:
            self._sent.append(self._sender.submit(self._send, sql))
        else:
            self._run(sql)

    def _run(self, sql: str) -> None:
        try:
            with self.raw.cursor() as cur:
                cur.execute(sql)
        except pymysql.MySQLError as exc:
            raise driver_error(exc) from exc

    def executemany(self, sql: str, seq: Sequence[Sequence[Any]]) -> None:
        items = list(seq)
        if not items:
            return
        text = translate(sql)
        multi = RE_INSERT_VALUES.match(text)
        if multi is not None:
            head, row, tail = multi.group(1), multi.group(2).rstrip(), multi.group(3)
            self.insert_rows(head, items, tail, row)
            return
        if self._sent:
            self._wait()
        try:
            with self.raw.cursor() as cur:
                cur.executemany(text, [tuple(p) for p in items])
        except pymysql.MySQLError as exc:
            raise driver_error(exc) from exc
