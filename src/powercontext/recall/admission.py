"""Heavy prepares are admitted by a limit, so a burst of them cannot slow everyone else's (issue 37).

A prepare that searches more than ``LIGHT_SCOPES`` Scopes is heavy. At most ``slots`` heavy prepares run at once;
the others wait for a slot, but only as long as the prepare's deadline: one that would wait longer — judged from
how long recent heavy prepares took and how many are ahead — is refused at once with ``429 prepare-busy`` and a
``Retry-After``, and the hosts fail open, instead of queueing work whose answer would come too late. Light
prepares (a Scope and a few references) never wait here.

A second after the last heavy prepare of a burst finishes, the memory the burst took is handed back to the operating
system (``malloc_trim``, off the request path), so a burst does not leave the Server's RSS at its peak.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar, Final

from powercontext.domain.errors import RequestRefused

LIGHT_SCOPES: Final = 4
RETRY_AFTER_S: Final = 1
_FIRST_ESTIMATE_S: Final = 0.1  # before any heavy prepare has been timed
_SMOOTHING: Final = 0.3
TRIM_AFTER_S: Final = 1.0


class PrepareBusy(RequestRefused):
    code, status = "prepare-busy", 429
    headers: ClassVar[dict[str, str]] = {"Retry-After": str(RETRY_AFTER_S)}

    def __init__(self) -> None:
        super().__init__(
            "the Server is busy with other prepares that search many Scopes; retry after "
            f"{RETRY_AFTER_S} s, or reference fewer Scopes"
        )


class HeavyPrepareGate:
    """The limit on heavy prepares running at once (thread-safe; one per Server)."""

    def __init__(self, slots: int = 1) -> None:
        self.slots = max(1, slots)
        self._free = threading.Semaphore(self.slots)
        self._lock = threading.Lock()
        self._queued = 0  # waiting or running
        self._mean_s = _FIRST_ESTIMATE_S
        self._trim: threading.Timer | None = None

    @contextmanager
    def admitted(self, searched: int, wait_s: float) -> Iterator[None]:
        """Run the block now if the prepare is light, else within ``wait_s`` seconds or raise ``PrepareBusy``."""
        if searched <= LIGHT_SCOPES:
            yield
            return
        with self._lock:
            ahead = max(0, self._queued - self.slots + 1)
            if math.ceil(ahead / self.slots) * self._mean_s > wait_s:
                raise PrepareBusy()
            self._queued += 1
        try:
            if not self._free.acquire(timeout=max(wait_s, 0.0)):
                raise PrepareBusy()
            started = time.monotonic()
            try:
                yield
            finally:
                self._finished(time.monotonic() - started)
        finally:
            with self._lock:
                self._queued -= 1
                if self._queued == 0:
                    self._trim_later()

    def _trim_later(self) -> None:
        """Return the burst's memory once no heavy prepare has run for ``TRIM_AFTER_S`` (called under the lock)."""
        if self._trim is not None:
            self._trim.cancel()
        self._trim = threading.Timer(TRIM_AFTER_S, self._trim_if_idle)
        self._trim.daemon = True
        self._trim.start()

    def _trim_if_idle(self) -> None:
        with self._lock:
            if self._queued:
                return
        return_free_memory()

    def _finished(self, seconds: float) -> None:
        with self._lock:
            self._mean_s += _SMOOTHING * (seconds - self._mean_s)
        self._free.release()


_libc: ctypes.CDLL | None = None
_libc_checked = False


def return_free_memory() -> None:
    """Hand the C heap's free pages back to the operating system (glibc's ``malloc_trim``; elsewhere nothing)."""
    global _libc, _libc_checked
    if not _libc_checked:
        _libc_checked = True
        name = ctypes.util.find_library("c")
        try:
            libc = ctypes.CDLL(name) if name else None
        except OSError:
            libc = None
        _libc = libc if libc is not None and hasattr(libc, "malloc_trim") else None
    if _libc is not None:
        _libc.malloc_trim(0)
