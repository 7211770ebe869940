"""One private event loop on a daemon thread, to which any thread submits coroutines and waits for their result.

The blocking client runs the async client's code there, so a call works the same from a plain script, from
several threads at once, and from a thread whose own loop is running (a notebook cell, code inside
``asyncio.run``): the loop that runs the call is never the caller's.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from powercontext.errors import ClientClosed

T = TypeVar("T")


class LoopThread:
    """The loop and its thread, started by the first call; ``close`` ends both (the thread is joined)."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._lock = threading.RLock()  # a future already done runs its callback (``_done``) at once
        self._pending: set[concurrent.futures.Future[Any]] = set()
        self._closed = False

    def call(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        """Run the coroutine ``make()`` on the loop and wait for it. The coroutine is made only once the call is
        accepted: a closed runner raises ``ClientClosed`` and leaves no coroutine behind un-awaited."""
        with self._lock:
            if self._closed:
                raise ClientClosed()
            future = self._submit(make)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # e.g. KeyboardInterrupt while waiting: the request stops too
            raise

    def close(self, last: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Refuse new calls, wait for the running ones, run ``last()`` (the HTTP client's ``aclose``), then stop
        the loop and join its thread. A second call does nothing."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("a SyncPowerContextClient was closed from its own transport")
        with self._lock:
            if self._closed:
                return
            self._closed = True
            pending = set(self._pending)
        concurrent.futures.wait(pending)
        with self._lock:
            final = self._submit(last)
        try:
            final.result()
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join()

    def close_soon(self, last: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """``close`` without waiting for anything (for a client collected unclosed: this may run on any thread,
        the loop's own included)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._thread is None:
                self._loop.close()
                return

        async def finish() -> None:
            try:
                await last()
            finally:
                self._loop.stop()

        self._loop.call_soon_threadsafe(self._loop.create_task, finish())

    def _submit(self, make: Callable[[], Coroutine[Any, Any, T]]) -> concurrent.futures.Future[T]:
        """Hand ``make()`` to the loop (the lock is held), starting the thread on the first call."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("a SyncPowerContextClient was called from its own transport; use the async client there")
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="powercontext-client-loop", daemon=True)
            self._thread.start()
        future = asyncio.run_coroutine_threadsafe(make(), self._loop)
        self._pending.add(future)
        future.add_done_callback(self._done)
        return future

    def _done(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._pending.discard(future)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            leftover = asyncio.all_tasks(self._loop)
            for task in leftover:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*leftover, return_exceptions=True))
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
            self._loop.close()
