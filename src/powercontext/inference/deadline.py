"""A total deadline for one HTTP call to a model provider, whatever the provider does with its bytes.

httpx's timeouts bound each socket operation, not the call: a server that sends one byte a second never
trips a 2-second read timeout and holds the caller for as long as it likes. ``DeadlineTransport`` runs
httpx over httpcore with a network layer that clamps every connect, write and read (status line and
headers included) to the time left before the active ``Deadline``, and fails the operation once it has
passed. The deadline is per thread (a context variable), so one client and its connection pool serve
many concurrent callers, each with its own budget::

    client = httpx.Client(transport=DeadlineTransport())
    with Deadline.after(2.0).applied():
        client.post(url, json=body, timeout=2.0)   # raises httpx.TimeoutException after 2 s at most

A caller may also give up early on every call it makes in a block (``abandon_when``): a waiting read
then wakes every ``POLL_S`` to ask, and fails as a timeout once the answer is yes. The embedding guard
uses it so that calls already waiting on a provider stop when another call has shown it to be stalled.

Any provider (embeddings, generation) uses the same pieces. Host names are resolved by the operating
system inside ``connect``; that lookup is the one step a socket timeout cannot bound.
"""

from __future__ import annotations

import socket
import ssl
import time
import typing
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import httpcore
import httpx

from powercontext.inference.direct_post import DirectPost
from powercontext.inference.errors import InferenceTimeout, InferenceUnavailable

__all__ = [
    "MIN_CALL_S",
    "Deadline",
    "DeadlineTransport",
    "abandon_when",
    "active_deadline",
    "environment_proxy",
    "post_to_provider",
]

# A provider call with less time than this left before the active deadline would only be cut off: callers
# that check (a prepare's stages) do not start it.
MIN_CALL_S = 0.01
POLL_S = 0.05  # how often a read waiting under ``abandon_when`` asks whether to give up
# httpcore writes a request's headers and body in two sends; with Nagle's algorithm on, the body waits for
# the peer to acknowledge the headers (a delayed ACK can hold it for up to 40 ms). Every HTTP client that
# cares about latency (urllib3, curl) turns Nagle off.
_SOCKET_OPTIONS: tuple[httpcore.SOCKET_OPTION, ...] = ((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),)


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
        """Bound every ``DeadlineTransport`` socket operation this thread makes inside the block."""
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
    """Inside the block, a ``DeadlineTransport`` call of this thread fails as a timeout once ``check()`` is true.

    ``check`` runs on the calling thread before each socket operation and every ``POLL_S`` while a read waits,
    so it must be cheap and must not block.
    """
    token = _abandon.set(check)
    try:
        yield
    finally:
        _abandon.reset(token)


def _bounded(timeout: float | None, expired: type[httpcore.TimeoutException]) -> float | None:
    """``timeout`` shortened to the active deadline; raises ``expired`` when nothing is left or the caller
    has abandoned the call.

    Never returns 0: a socket timeout of 0 means non-blocking, not "no time left".
    """
    check = _abandon.get()
    if check is not None and check():
        raise expired("the caller abandoned the call")
    deadline = _active.get()
    if deadline is None:
        return timeout
    left = deadline.remaining()
    if left <= 0:
        raise expired("the call's total deadline passed")
    return left if timeout is None else min(timeout, left)


def _call_time_left(at: float, expired: type[httpx.TimeoutException], poll: bool) -> float:
    """For ``DirectPost``: seconds left before ``at`` and the active deadline (sliced to ``POLL_S`` when
    ``poll`` and the caller may abandon); raises ``expired`` once nothing is left or the caller gave up."""
    check = _abandon.get()
    if check is not None and check():
        raise expired("the caller abandoned the call")
    active = _active.get()
    left = (at if active is None else min(at, active.at)) - time.monotonic()
    if left <= 0:
        raise expired("the call's total deadline passed")
    return min(left, POLL_S) if poll and check is not None else left


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if _abandon.get() is None:
            return self._inner.read(max_bytes, _bounded(timeout, httpcore.ReadTimeout))
        # Wait in short slices, asking in between whether to give up. A socket read that times out has
        # consumed nothing, so the next slice continues the same read.
        started = time.monotonic()
        while True:
            bounded = _bounded(timeout, httpcore.ReadTimeout)
            try:
                return self._inner.read(max_bytes, POLL_S if bounded is None else min(bounded, POLL_S))
            except httpcore.ReadTimeout:
                if timeout is not None and time.monotonic() - started >= timeout:
                    raise

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        # One send of a large body could outlast the deadline on a slow reader: write it in pieces.
        for start in range(0, len(buffer), 1 << 16):
            self._inner.write(buffer[start : start + (1 << 16)], _bounded(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, bounded))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_tcp(host, port, bounded, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None
    ) -> httpcore.NetworkStream:
        bounded = _bounded(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.connect_unix_socket(path, bounded, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


# httpcore's failures as the httpx exceptions callers already catch.
_MAPPED: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
)


@contextmanager
def _as_httpx_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for core, mapped in _MAPPED:
            if isinstance(exc, core):
                raise mapped(type(exc).__name__) from None
        raise


class _ResponseBody(httpx.SyncByteStream):
    def __init__(self, inner: Iterable[bytes]) -> None:
        self._inner = inner

    def __iter__(self) -> Iterator[bytes]:
        with _as_httpx_errors():
            yield from self._inner

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if callable(close):
            close()


def environment_proxy(url: str) -> str | None:
    """The HTTP(S) proxy the environment (``HTTPS_PROXY``, ``HTTP_PROXY``, ``NO_PROXY``) names for ``url``.

    httpx applies these itself only with its default transport; a ``DeadlineTransport`` is told explicitly.
    A SOCKS proxy is not supported here and counts as none.
    """
    parts = urllib.parse.urlsplit(url)
    proxy = urllib.request.getproxies().get(parts.scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return proxy if proxy.lower().startswith(("http://", "https://")) else None


class DeadlineTransport(httpx.BaseTransport):
    """An httpx transport (HTTP/1.1) whose every socket operation honours the active ``Deadline``.

    Outside ``Deadline.applied()`` it behaves like httpx's default transport with the request's timeouts.
    A call that fails mid-response closes its connection, so a stalled one is never handed to the next
    caller. ``proxy`` (an ``http://`` or ``https://`` URL) sends every request through that proxy.
    """

    def __init__(
        self, *, proxy: str | None = None, max_connections: int = 100, max_keepalive_connections: int = 20
    ) -> None:
        self._pool: httpcore.ConnectionPool
        # Direct connections post through the lean client; a proxy (CONNECT tunnels, absolute-form targets)
        # stays with httpcore, which implements it.
        self._direct = None if proxy is not None else DirectPost(httpx.create_ssl_context(), _call_time_left)
        if proxy is None:
            self._pool = httpcore.ConnectionPool(
                ssl_context=httpx.create_ssl_context(),
                max_connections=max_connections,
                max_keepalive_connections=max_keepalive_connections,
                network_backend=_DeadlineBackend(),
                socket_options=_SOCKET_OPTIONS,
            )
        else:
            self._pool = httpcore.HTTPProxy(
                proxy_url=proxy,
                ssl_context=httpx.create_ssl_context(),
                max_connections=max_connections,
                max_keepalive_connections=max_keepalive_connections,
                network_backend=_DeadlineBackend(),
                socket_options=_SOCKET_OPTIONS,
            )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.SyncByteStream)
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx_errors():
            response = self._pool.handle_request(core_request)
        assert isinstance(response.stream, Iterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseBody(response.stream),
            extensions=response.extensions,
        )

    def post(
        self, url: str, headers: list[tuple[bytes, bytes]], content: bytes, timeout_s: float, max_bytes: int
    ) -> tuple[int, bytes | None]:
        """POST ``content`` straight through the connection pool, without ``httpx.Client``'s layers (auth,
        redirects, cookies, URL and header merging: about half of a small call's CPU time). Returns the
        status and the body, or None for the body when it exceeded ``max_bytes`` (the connection is then
        closed, not reused). Call it inside ``Deadline.applied()``; failures raise the httpx exceptions."""
        if self._direct is not None:
            return self._direct.post(url, headers, content, timeout_s, max_bytes)
        extensions = {"timeout": {"connect": timeout_s, "read": timeout_s, "write": timeout_s, "pool": timeout_s}}
        with (
            _as_httpx_errors(),
            self._pool.stream("POST", url, headers=headers, content=content, extensions=extensions) as response,
        ):
            chunks: list[bytes] = []
            size = 0
            assert isinstance(response.stream, Iterable)
            for chunk in response.stream:
                size += len(chunk)
                if size > max_bytes:  # leaving unread bytes behind closes the connection instead of pooling it
                    return response.status, None
                chunks.append(chunk)
            return response.status, b"".join(chunks)

    def close(self) -> None:
        if self._direct is not None:
            self._direct.close()
        self._pool.close()


def post_to_provider(
    transport: DeadlineTransport,
    url: str,
    headers: list[tuple[bytes, bytes]],
    content: bytes,
    timeout_s: float,
    max_bytes: int,
    server: str,
) -> bytes:
    """One provider call within a total deadline of ``timeout_s``: the answer's body when the status is 2xx,
    else ``InferenceTimeout`` / ``InferenceUnavailable`` with a content-free message naming ``server`` (e.g.
    "embedding"). httpx's exceptions are re-raised ``from None``: their messages and causes may carry the URL
    or the body. A ``Deadline`` already active on this thread (a prepare's) ends the call earlier when it is
    earlier."""
    deadline = Deadline.after(timeout_s)
    outer = _active.get()
    if outer is not None and outer.at < deadline.at:
        deadline = outer
    try:
        with deadline.applied():
            status, raw = transport.post(url, headers, content, timeout_s, max_bytes)
    except httpx.TimeoutException:
        raise InferenceTimeout(f"the {server} server did not answer within the timeout") from None
    except httpx.HTTPError as exc:
        raise InferenceUnavailable(f"the {server} server could not be reached ({type(exc).__name__})") from None
    if not 200 <= status < 300:
        raise InferenceUnavailable(f"the {server} server answered HTTP {status}")
    if raw is None:
        size = f"{max_bytes >> 20} MiB" if max_bytes % (1 << 20) == 0 else f"{max_bytes:,} bytes"
        raise InferenceUnavailable(f"the {server} server answered more than {size}")
    return raw
