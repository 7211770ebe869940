"""A total deadline for every HTTP call to a model provider, whatever the provider does with its bytes.

httpx's timeouts bound each socket operation, not the call: a server that sends one byte a second never
trips a 2-second read timeout and holds the caller for as long as it likes. So a ``ProviderClient`` runs
each call as a coroutine of its ``httpx.AsyncClient`` on one event-loop thread shared by every provider,
under an ``asyncio.timeout`` that cancels the whole exchange (connect, status line, headers, body) when
the deadline passes; the calling thread waits for the answer no longer than that. Cancelling a call
mid-response closes its connection, so a stalled one is never handed to the next caller::

    client = ProviderClient("http://127.0.0.1:8080/v1/embeddings", "embedding")
    client.post(body, timeout_s=2.0, max_bytes=1 << 20)   # InferenceTimeout after 2 s at most

A prepare runs under a ``Deadline`` of its own (``Deadline.applied()``, a context variable of the calling
thread): every call it makes ends by the earlier of the two. A caller may also give up early on every call
it makes in a block (``abandon_when``): the waiting thread then asks every ``POLL_S`` and fails the call as
a timeout once the answer is yes. The embedding guard uses it so that calls already waiting on a provider
stop when another call has shown it to be stalled.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import httpx

from powercontext.inference.errors import InferenceTimeout, InferenceUnavailable

__all__ = ["MIN_CALL_S", "Deadline", "ProviderClient", "abandon_when", "active_deadline"]

# A provider call with less time than this left before the active deadline would only be cut off: callers
# that check (a prepare's stages) do not start it.
MIN_CALL_S = 0.01
POLL_S = 0.05  # how often a call waiting under ``abandon_when`` asks whether to give up


@dataclass(frozen=True)
class Deadline:
    """A point on the monotonic clock by which a call must have finished."""

    at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds)

    def remaining(self) -> float:
        """Seconds left; zero or negative once the deadline has passed."""
        return self.at - time.monotonic()

    @contextmanager
    def applied(self) -> Iterator[Deadline]:
        """Bound every ``ProviderClient`` call this thread makes inside the block."""
        token = _active.set(self)
        try:
            yield self
        finally:
            _active.reset(token)


_active: ContextVar[Deadline | None] = ContextVar("powercontext_inference_deadline", default=None)
_abandon: ContextVar[Callable[[], bool] | None] = ContextVar("powercontext_inference_abandon", default=None)


def active_deadline() -> Deadline | None:
    """The ``Deadline`` active on this thread (a prepare's, while it runs), or None."""
    return _active.get()


@contextmanager
def abandon_when(check: Callable[[], bool]) -> Iterator[None]:
    """Inside the block, a ``ProviderClient`` call of this thread fails as a timeout once ``check()`` is true.

    ``check`` runs on the calling thread before the call and every ``POLL_S`` while it waits, so it must be
    cheap and must not block.
    """
    token = _abandon.set(check)
    try:
        yield
    finally:
        _abandon.reset(token)


_loop_lock = threading.Lock()
_loop: tuple[int, asyncio.AbstractEventLoop] | None = None


def _event_loop() -> asyncio.AbstractEventLoop:
    """The providers' event loop, started on first use (and again in a forked child, which has no thread)."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop[0] != os.getpid():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="powercontext-providers", daemon=True).start()
            _loop = (os.getpid(), loop)
        return _loop[1]


class _Expired(Exception):
    """The call's deadline passed, or its caller abandoned it."""


class ProviderClient:
    """POSTs JSON to one provider URL within a total deadline; thread-safe, one connection pool for all callers.

    Redirects are not followed (a 3xx is not a success). Proxies come from the environment (``HTTPS_PROXY``,
    ``HTTP_PROXY``, ``NO_PROXY``), as httpx reads them; a SOCKS proxy without httpx's SOCKS extra counts as none.
    """

    def __init__(self, url: str, server: str, *, api_key: str | None = None) -> None:
        self._url = url
        self._server = server  # names the provider in error messages, e.g. "embedding"
        # identity: the size cap counts the bytes on the wire, and no decompression runs on a hostile answer
        headers = {"accept": "application/json", "content-type": "application/json", "accept-encoding": "identity"}
        if api_key:
            headers["authorization"] = f"Bearer {api_key}"
        try:
            self._client = httpx.AsyncClient(headers=headers)
        except ImportError:  # a SOCKS proxy in the environment, and no socksio to speak it
            self._client = httpx.AsyncClient(headers=headers, trust_env=False)
        self._loop = _event_loop()

    def post(self, content: bytes, timeout_s: float, max_bytes: int) -> bytes:
        """The answer's body when the status is 2xx, within ``timeout_s`` (or the active ``Deadline``, when it
        is earlier); else ``InferenceTimeout`` / ``InferenceUnavailable`` with a content-free message. httpx's
        exceptions are not chained: their messages may carry the URL."""
        deadline = Deadline.after(timeout_s)
        outer = _active.get()
        if outer is not None and outer.at < deadline.at:
            deadline = outer
        try:
            status, raw = self._wait(deadline, _abandon.get(), content, max_bytes)
        except (_Expired, httpx.TimeoutException):
            raise InferenceTimeout(f"the {self._server} server did not answer within the timeout") from None
        except httpx.HTTPError as exc:
            name = type(exc).__name__
            raise InferenceUnavailable(f"the {self._server} server could not be reached ({name})") from None
        if not 200 <= status < 300:
            raise InferenceUnavailable(f"the {self._server} server answered HTTP {status}")
        if raw is None:
            size = f"{max_bytes >> 20} MiB" if max_bytes % (1 << 20) == 0 else f"{max_bytes:,} bytes"
            raise InferenceUnavailable(f"the {self._server} server answered more than {size}")
        return raw

    def close(self) -> None:
        # RuntimeError, or no answer: the loop is gone (interpreter shutdown) and the sockets with it.
        with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
            asyncio.run_coroutine_threadsafe(self._client.aclose(), self._loop).result(timeout=1.0)

    def _wait(
        self, deadline: Deadline, abandon: Callable[[], bool] | None, content: bytes, max_bytes: int
    ) -> tuple[int, bytes | None]:
        left = deadline.remaining()
        if left <= 0 or (abandon is not None and abandon()):
            raise _Expired
        call = asyncio.run_coroutine_threadsafe(self._exchange(content, left, max_bytes), self._loop)
        while not call.done():
            left = deadline.remaining()
            if left <= 0 or (abandon is not None and abandon()):
                call.cancel()  # the exchange stops at its next await and drops its connection
                raise _Expired
            concurrent.futures.wait((call,), timeout=left if abandon is None else min(left, POLL_S))
        try:
            return call.result()
        except (TimeoutError, concurrent.futures.CancelledError):
            raise _Expired from None

    async def _exchange(self, content: bytes, seconds: float, max_bytes: int) -> tuple[int, bytes | None]:
        """The status and body, or None for the body once it exceeds ``max_bytes`` (the rest is left unread:
        the connection is closed, not pooled)."""
        async with (
            asyncio.timeout(seconds),
            self._client.stream("POST", self._url, content=content, timeout=seconds) as response,
        ):
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_raw():
                size += len(chunk)
                if size > max_bytes:
                    return response.status_code, None
                chunks.append(chunk)
            return response.status_code, b"".join(chunks)
