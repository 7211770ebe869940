"""What readiness knows of a store beyond "it answers a read": can it write, and is it whole.

Each check is cheap enough for every ``/health/ready`` (microseconds, no lock, no write):

- the last storage fault a write met (a full disk, a read-only file, an I/O error), until a write succeeds, the
  room it lacked is freed, or ``FAULT_HOLD_S`` passes;
- the file system under the store: mounted read-only, no room left (under ``MIN_FREE_BYTES``), or the store's
  file or directory not writable by this process: a write would fail, so the Server is not ready before one
  is tried;
- a damaged store: the verdict of the integrity check (run at start for a small SQLite file, in the
  background for a larger one: ``IntegrityCheck``), or a damaged page met by any read or write; this one stays
  until the Server restarts on a repaired store;
- on embedded seekdb, a writer lock still held by a transaction recovered from before a crash
  (``oceanbase/writer_lock.py``); this one stays until the Server restarts on a store without it: the engine
  never ends such a transaction, and a write that succeeds does not show it has gone (writers on the embedded
  engine do not take that row, and a write fails only if it needs one of the rows the transaction holds).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from powercontext.store.errors import StorageFault, StoreCorrupt, StoreFull

# Less room than this on the store's file system and a write is about to fail: a SQLite commit appends its pages
# to the write-ahead log, and one largest batch is some 10 MB of pages.
MIN_FREE_BYTES = 1024 * 1024
# How long a write's storage fault keeps the Server not ready when nothing shows its cause has gone.
FAULT_HOLD_S = 30.0

_log = logging.getLogger("powercontext.store")


@dataclass(frozen=True)
class StoreProblem:
    """Why the store is not ready: a stable ``reason`` (an error code) and a message saying what to do."""

    reason: str
    message: str


class StoreHealth:
    """The store's write and integrity state as readiness reports it. Thread-safe; every check is cheap."""

    def __init__(self, directory: Path | None, file: Path | None = None, min_free_bytes: int = MIN_FREE_BYTES) -> None:
        self._directory = directory
        self._file = file
        self._min_free = min_free_bytes  # less room than this and a write is about to fail
        self._lock = threading.Lock()
        self._fault: StorageFault | None = None
        self._fault_room = 0  # the free bytes when ``_fault`` was noted
        self._fault_at = 0.0
        self._damaged: StoreProblem | None = None
        self._stale_lock: StoreProblem | None = None
        self._full_since_write = False  # a write met a full disk, and none has succeeded since

    # -- what the store tells it ---------------------------------------------------------------------

    def note_fault(self, fault: StorageFault) -> None:
        with self._lock:
            if isinstance(fault, StoreCorrupt):
                self._damaged = StoreProblem(fault.code, str(fault))
            else:
                self._fault, self._fault_room, self._fault_at = fault, self._free_bytes(), time.monotonic()
                self._full_since_write = self._full_since_write or isinstance(fault, StoreFull)

    def note_write_ok(self) -> None:
        if self._fault is not None or self._full_since_write:
            with self._lock:
                self._fault = None
                self._full_since_write = False

    def full_disk_unresolved(self) -> bool:
        """Whether the store's disk is full now (under ``MIN_FREE_BYTES`` free), or a write met a full disk and no
        write has succeeded since: what a write that timed out on the embedded engine is then taken to mean."""
        if self._full_since_write:
            return True
        return self._directory is not None and self._free_bytes() < self._min_free

    def note_damaged(self, verdict: str) -> None:
        with self._lock:
            self._damaged = StoreProblem(
                StoreCorrupt.code,
                f"the store is damaged (integrity check: {verdict}); stop the Server and restore a backup"
                " (docs/operations.md, Backup)",
            )
        _log.error("event=store.integrity.failed")

    def note_stale_writer_lock(self) -> None:
        with self._lock:
            self._stale_lock = StoreProblem(
                "store-locked",
                "a transaction left by a crash holds the store's writer lock, so writes wait and fail; reads work:"
                " copy the store to a new directory (powercontext store copy --from <this URL> --to"
                " seekdb:///<new dir>) and start the Server on the copy",
            )
        _log.error("event=store.writer_lock.stale")

    # -- what readiness asks -------------------------------------------------------------------------

    def problem(self) -> StoreProblem | None:
        """The first reason the store cannot serve writes (or reads), or None."""
        with self._lock:
            for known in (self._damaged, self._stale_lock):
                if known is not None:
                    return known
            fault = self._fault
            if fault is not None and self._fault_passed():
                fault = self._fault = None
        if fault is not None:
            return StoreProblem(fault.code, str(fault))
        return self._room_and_rights()

    def _fault_passed(self) -> bool:
        """A write's fault stops counting once its cause looks gone (room freed since), or after ``FAULT_HOLD_S``:
        an orchestrator that stops sending traffic to a Server that is not ready would otherwise never let a
        write succeed and clear it. A fault that persists is met again by the next write."""
        if time.monotonic() - self._fault_at > FAULT_HOLD_S:
            return True
        return self._free_bytes() > self._fault_room + self._min_free

    def _free_bytes(self) -> int:
        if self._directory is None:
            return 0
        try:
            stats = os.statvfs(self._directory)
        except OSError:
            return 0
        return (stats.f_bfree if os.geteuid() == 0 else stats.f_bavail) * stats.f_frsize

    def _room_and_rights(self) -> StoreProblem | None:
        if self._directory is None:
            return None
        try:
            stats = os.statvfs(self._directory)
        except OSError:
            return None  # the store's own reads say what is wrong
        if stats.f_flag & os.ST_RDONLY:
            return StoreProblem("store-read-only", f"{_READ_ONLY}: its file system is mounted read-only; {_WRITABLE}")
        free = self._free_bytes()
        if free < self._min_free:
            return StoreProblem(
                "store-full",
                f"the disk that holds the store is full ({free // 1024} KiB free); free space on that file system",
            )
        for target in (self._file, self._directory):
            if target is not None and target.exists() and not os.access(target, os.W_OK):
                return StoreProblem("store-read-only", f"{_READ_ONLY}: {target.name} is read-only; {_WRITABLE}")
        return None


_READ_ONLY = "the store cannot be written"
_WRITABLE = "make it writable by the Server's user"


class IntegrityCheck:
    """Runs ``check`` (which returns SQLite's ``quick_check`` verdict) once on a thread of its own, and reports a
    failure to ``health``: a large store is checked without delaying the Server's start or its requests."""

    def __init__(self, check: Callable[[], str], health: StoreHealth) -> None:
        self._check = check
        self._health = health
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="powercontext-integrity", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        started = time.monotonic()
        try:
            verdict = self._check()
        except Exception as exc:  # a page so damaged that the check itself fails
            verdict = type(exc).__name__
        if verdict != "ok":
            self._health.note_damaged(verdict)
        else:
            _log.info("event=store.integrity.ok seconds=%.1f", time.monotonic() - started)
        self.done.set()
