"""Connections to seekdb/OceanBase: the embedded engine (``pylibseekdb``) or a server, both over pymysql.

An embedded instance serves its data directory through a private unix socket; this module opens each
directory at most once per process and hands out pymysql connections to that socket, so every
thread (and the store's writer) gets its own MySQL-protocol session. Reads of text and numbers on an
embedded instance may also take a session of the engine's own C client (``native_reader``).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from powercontext.store.errors import StoreNotFound, StoreOpenRefused
from powercontext.store.location import StoreLocation

_instances: dict[str, Any] = {}
_lock = threading.Lock()
# Every statement has a deadline: a stuck server surfaces as StoreUnavailable, not a hung request.
READ_TIMEOUT_S = 30
CONNECT_TIMEOUT_S = 10


class EngineUnavailable(RuntimeError):
    """The seekdb engine or server could not be reached; the message says why (never a password)."""


def _embedded_options(location: StoreLocation) -> dict[str, Any]:
    assert location.path is not None
    directory = str(location.path.resolve())
    with _lock:
        instance = _instances.get(directory)
        if instance is None or instance.closed:
            try:
                import pylibseekdb
            except ImportError as exc:
                raise EngineUnavailable(
                    "the embedded seekdb engine is not installed; pip install 'powercontext[oceanbase]'"
                ) from exc
            _make_directory(location)
            try:
                instance = pylibseekdb.open(directory)
            except Exception as exc:  # the binding raises RuntimeError/SeekdbError with the engine's reason
                raise EngineUnavailable(f"seekdb could not open {directory}: {exc}") from exc
            _instances[directory] = instance
        return dict(instance.connection_options())


def _make_directory(location: StoreLocation) -> None:
    """Create the seekdb directory; a path that is a file, or that cannot be created, is refused in one line."""
    assert location.path is not None
    if location.path.exists() and not location.path.is_dir():
        raise StoreOpenRefused(
            f"{location.path} is a file, not a seekdb directory; a seekdb:/// URL names a directory"
            " (use sqlite:///path/file.db for a SQLite file)"
        )
    try:
        location.path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreOpenRefused(
            f"cannot create the seekdb directory {location.path}: {exc.strerror or exc}; name a directory you can write"
        ) from None


def native_reader(location: StoreLocation) -> Any | None:
    """An autocommit session of the embedded engine's own C client, or ``None`` (a server, or it cannot open).

    That client decodes rows in C with the GIL released, where pymysql decodes them in Python: on a hybrid
    prepare the full-text side's reads then stop holding up the query embedding on the other thread. It returns
    every column as text, so it serves only reads that select no BLOB (``dialect.Connection``). The engine
    enforces the statement deadline itself (``ob_query_timeout``), as pymysql's read timeout does for the rest.
    """
    if location.backend != "seekdb":
        return None
    _embedded_options(location)
    assert location.path is not None
    instance = _instances[str(location.path.resolve())]
    try:
        session = instance.connect(database=location.database, autocommit=True)
        cursor = session.cursor()
        cursor.execute(f"SET SESSION ob_query_timeout = {READ_TIMEOUT_S * 1_000_000}")
        cursor.close()
    except RuntimeError:  # SeekdbError is one: pymysql serves every read then
        return None
    return session


def connect(location: StoreLocation, database: str | None = None) -> Any:
    """A new pymysql connection (autocommit off) to the location's database, or to no database."""
    try:
        import pymysql
    except ImportError as exc:
        raise EngineUnavailable("pymysql is not installed; pip install 'powercontext[oceanbase]'") from exc
    if location.backend == "seekdb":
        options = _embedded_options(location)
    else:
        options = {
            "host": location.host,
            "port": location.port,
            "user": location.user,
            "password": os.environ.get("POWERCONTEXT_STORE_PASSWORD", ""),
        }
    try:
        return pymysql.connect(
            **options,
            database=database,
            autocommit=False,
            charset="utf8mb4",
            connect_timeout=CONNECT_TIMEOUT_S,
            read_timeout=READ_TIMEOUT_S,
            write_timeout=READ_TIMEOUT_S,
        )
    except pymysql.MySQLError as exc:
        # exc.args[1] is the server's message; it never contains the password.
        reason = exc.args[1] if len(exc.args) > 1 else type(exc).__name__
        raise EngineUnavailable(f"cannot connect to {location.display()}: {reason}") from exc


def execute_alone(location: StoreLocation, statement: str, database: str | None = None) -> None:
    """Run one statement on a session of its own and commit it (DDL commits implicitly, and must not end the
    transaction of a session that is writing)."""
    conn = connect(location, database)
    try:
        with conn.cursor() as cur:
            cur.execute(statement)
        conn.commit()
    finally:
        conn.close()


def ensure_database(location: StoreLocation, *, create: bool = True) -> None:
    """Create the location's database if it does not exist yet; one that exists is only looked up. With
    ``create=False`` a missing one raises ``StoreNotFound`` instead.

    DDL, even ``IF NOT EXISTS`` on what exists, takes the engine's DDL lock. Just after an embedded engine
    starts, it loads its system packages under that lock too, and the two were seen to wait on each other
    until the statement's read timeout (30 s), failing the store's open; so reopening a database runs no DDL.
    """
    conn = connect(location)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (location.database,))
            if cur.fetchone() is None:
                if not create:
                    raise StoreNotFound(location.display())
                cur.execute(f"CREATE DATABASE IF NOT EXISTS `{location.database}`")
        conn.commit()
    finally:
        conn.close()
