"""The probes answer from the event loop: a store that hangs, or every worker thread busy, does not hold them.

The in-process server is built from real parts; the store is the real SQLite store behind a wrapper whose
``ready`` or reads hang, as a store stuck on a lock would.
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from powercontext.store.sqlite import SqliteStore
from tests.conftest import CountingStore, StartInProcess
from tests.support import wait_until

HANG_S = 5.0


class HangingStore(CountingStore):
    """The real store, except that ``ready`` and Scope listing each wait until their event is set."""

    def __init__(self, inner: SqliteStore) -> None:
        super().__init__(inner)
        self.ready_released = threading.Event()
        self.reads_released = threading.Event()

    def ready(self) -> bool:
        self.ready_released.wait(HANG_S)
        return bool(self.inner.ready())

    def list_scopes(self, *args: object, **kwargs: object) -> object:
        with self._lock:
            self.calls["list_scopes"] += 1
        self.reads_released.wait(HANG_S)
        return self.inner.list_scopes(*args, **kwargs)


def timed_get(http: httpx.Client, path: str) -> tuple[int, float]:
    started = time.perf_counter()
    status = http.get(path).status_code
    return status, time.perf_counter() - started


@pytest.mark.timed
def test_readiness_gives_up_on_a_hanging_store(inprocess_server: StartInProcess, sqlite_store: SqliteStore) -> None:
    store = HangingStore(sqlite_store)
    live = inprocess_server(store)  # type: ignore[arg-type]
    status, elapsed = timed_get(live.api.http, "/health/ready")
    assert status == 503 and elapsed < 2.0, (status, elapsed)
    assert timed_get(live.api.http, "/health/live")[0] == 200
    store.ready_released.set()
    assert live.api.get("/health/ready").status_code == 200


@pytest.mark.timed
def test_probes_answer_while_every_worker_thread_is_busy(
    inprocess_server: StartInProcess, sqlite_store: SqliteStore
) -> None:
    store = HangingStore(sqlite_store)
    store.ready_released.set()  # readiness answers; only the listings below hang
    live = inprocess_server(store)  # type: ignore[arg-type]
    # One client for the 48 callers, made up front: building 48 clients (TLS contexts) at once would load
    # this process, which also runs the server, and measure that instead.
    callers = httpx.Client(base_url=live.base_url, timeout=30, limits=httpx.Limits(max_connections=64))
    busy = [threading.Thread(target=callers.get, args=("/v1/scopes",)) for _ in range(48)]
    timed_get(live.api.http, "/health/live")  # the probe's connection is open before the pool fills
    for thread in busy:
        thread.start()
    assert wait_until(lambda: store.snapshot()["list_scopes"] >= 40)  # every worker thread is in the store
    try:
        for path in ("/health/live", "/health/ready"):
            status, elapsed = timed_get(live.api.http, path)
            assert status == 200 and elapsed < 0.5, (path, status, elapsed)
    finally:
        store.reads_released.set()
        for thread in busy:
            thread.join(timeout=30)
        callers.close()
