"""Writer serialization on seekdb/OceanBase that a crash cannot leave held.

A server (``oceanbase://``) outlives the Server process that talks to it: when that process dies the engine
closes its sessions and rolls their transactions back, so writers of several processes can take turns on a row
lock (``store_locks 'writer'``, ``SELECT … FOR UPDATE``). The embedded engine (``seekdb:///dir``) dies with the
process. Measured (issue 42): a transaction whose redo the engine had already logged before the kill comes back
at the next start as a transaction without a session, holding its row locks, and the engine's transaction
timeout (24 h by default, and not applied to a recovered transaction at all) never ends it; every later write
waited for the lock and failed. So, on the embedded engine:

- writers take a lock of the operating system instead of a row lock: a lock per engine directory inside the
  process, and ``flock`` on a file in that directory for any other process attached to the same engine; the
  kernel drops both with the process, so no lock can outlive it;
- the engine keeps a transaction's redo in memory until it commits (``_private_buffer_size = 0B``, a setting
  of the engine stored in its directory), so a transaction cut short by a kill leaves nothing to recover; a
  transaction that had started committing is finished by the engine at restart, as before.

On every backend each writer session has a bounded transaction and lock-wait time (``bound_session``), and at
start ``held_writer_lock`` tells whether a transaction (of a dead process, or a stuck one) still holds the
writer row.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from powercontext.store.errors import StoreUnavailable

# A writer waits this long for its turn (the SQLite store's busy timeout), then answers 503 store-unavailable.
LOCK_WAIT_S = 10.0
# The longest a write transaction may stay open (a batch takes well under a second; ``store copy`` batches a few
# seconds) and the longest it may sit idle between statements: a stuck client cannot hold the writer lock for
# the engine's default 24 hours.
TRANSACTION_TIMEOUT_S = 120
IDLE_TIMEOUT_S = 120
LOCK_FILE = "powercontext-writer.lock"
# The embedded engine extends its log a 64 MiB block at a time: with less room than that, its log stops at the
# end of the current block (and a write then times out: store.py, ``_write_fault``). Measured on a small file
# system (issue 42): restarted with 29 MiB free after a full disk, it answered no write for minutes.
ENGINE_MIN_FREE_BYTES = 64 * 1024 * 1024

# How long a store opening on the embedded engine waits for the transactions the engine recovered from before a
# crash to finish (see ``settle_recovered_transactions``) before it serves anyway.
SETTLE_WAIT_S = 60.0

_log = logging.getLogger("powercontext.store")
_turns: dict[str, threading.Lock] = {}
_files: dict[str, int] = {}
_registry = threading.Lock()


def bound_session(raw: Any) -> None:
    """Bound the transaction, idle and lock-wait times of one writer session (pymysql connection)."""
    with raw.cursor() as cur:
        cur.execute(
            f"SET SESSION ob_trx_timeout = {TRANSACTION_TIMEOUT_S * 1_000_000},"
            f" ob_trx_idle_timeout = {IDLE_TIMEOUT_S * 1_000_000},"
            f" ob_trx_lock_timeout = {int(LOCK_WAIT_S * 1_000_000)}"
        )


def keep_redo_until_commit(raw: Any) -> None:
    """Make the embedded engine log a transaction's redo only when it commits (see the module docstring).

    Read first and set only when different: an engine just started is busy with its own system work, and a
    reopened directory already has the setting."""
    with raw.cursor() as cur:
        cur.execute("SELECT value FROM oceanbase.__all_virtual_sys_parameter_stat WHERE name = '_private_buffer_size'")
        row = cur.fetchone()
        if row is not None and str(row[0]).strip().upper() in {"0", "0B", "0M"}:
            return
        cur.execute("ALTER SYSTEM SET _private_buffer_size = '0B'")


class WriterTurnTimeout(StoreUnavailable):
    """A writer waited ``LOCK_WAIT_S`` for its turn on the embedded engine (the writer before it did not finish)."""


class EngineWriterLock:
    """The writer's turn on one embedded engine directory: a thread lock shared by every store of this process on
    that directory, then ``flock`` on a file there (other processes attached to the same engine)."""

    def __init__(self, directory: Path) -> None:
        key = str(directory.resolve())
        with _registry:
            self._turn = _turns.setdefault(key, threading.Lock())
            if key not in _files:
                _files[key] = os.open(os.path.join(key, LOCK_FILE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            self._fd = _files[key]

    @contextmanager
    def held(self, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
        deadline = time.monotonic() + wait_s
        if not self._turn.acquire(timeout=wait_s):
            raise WriterTurnTimeout()
        try:
            while True:
                try:
                    fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise WriterTurnTimeout() from None
                    time.sleep(0.005)
            try:
                yield
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            self._turn.release()


def held_writer_lock(raw: Any, wait_s: float = 1.0) -> bool:
    """Whether another transaction holds the ``store_locks 'writer'`` row past ``wait_s``: on the embedded engine,
    a transaction recovered from before a crash (of a version that still locked that row); on a server, a
    stuck writer. Leaves the session with no transaction open."""
    with raw.cursor() as cur:
        cur.execute("SELECT @@ob_trx_lock_timeout")
        (before,) = cur.fetchone()
        cur.execute(f"SET SESSION ob_trx_lock_timeout = {int(wait_s * 1_000_000)}")
        raw.begin()
        try:
            cur.execute("SELECT name FROM store_locks WHERE name = 'writer' FOR UPDATE")
            cur.fetchall()
            held = False
        except Exception as exc:  # pymysql.MySQLError: 1205 lock wait timeout (or the statement's own timeout)
            if getattr(exc, "args", (None,))[0] not in (1205, 4012, 6003):
                raise
            held = True
        finally:
            raw.rollback()
            cur.execute(f"SET SESSION ob_trx_lock_timeout = {int(before)}")
    return held


def settle_recovered_transactions(raw: Any, wait_s: float = SETTLE_WAIT_S) -> None:
    """Wait, up to ``wait_s``, until the embedded engine holds no transaction or row lock but this session's own.

    Call it when the store opens, before the Server serves: nothing else of this process talks to the engine
    yet, so any other transaction is one the engine recovered from before a crash. A transaction that had
    started committing when the Server was killed is finished by the engine some seconds after the restart
    and holds its row locks until then (issue 42: the first write after a restart waited for them and answered
    ``503 store-unavailable`` after the 10 s lock wait, 1205). Past ``wait_s`` the store opens anyway, with a
    warning; a write then waits for those locks as before."""
    # A recovered transaction shows in the transaction list; its row locks show in the lock list, and both are
    # read, since nothing proves the engine lists a recovered transaction as soon as it lists the locks it holds.
    # Counts only: a lock's row key holds stored values.
    query = (
        "SELECT (SELECT count(*) FROM oceanbase.__all_virtual_trans_stat WHERE session_id <> CONNECTION_ID())"
        " + (SELECT count(*) FROM oceanbase.__all_virtual_trans_lock_stat WHERE session_id <> CONNECTION_ID())"
    )
    started = time.monotonic()
    logged = False
    while True:
        with raw.cursor() as cur:
            cur.execute(query)
            (pending,) = cur.fetchone()
        raw.rollback()  # end the read's snapshot: the next poll must see the engine's progress
        waited = time.monotonic() - started
        if not pending:
            if logged:
                _log.info("event=store.recovered_transactions.settled waited_s=%.1f", waited)
            return
        if waited >= wait_s:
            _log.warning("event=store.recovered_transactions.unsettled count=%d waited_s=%.1f", pending, waited)
            return
        if not logged:
            _log.info("event=store.recovered_transactions.waiting count=%d", pending)
            logged = True
        time.sleep(0.1)
