"""One HTTP/1.1 POST to a model provider over pooled keep-alive sockets, every step within the call's deadline.

A provider call is one small JSON request and one JSON answer. httpcore's general machinery (h11 events, pool
bookkeeping, stream wrappers) costs about half a millisecond of CPU per call, as much as the loopback round
trip itself, and a prepare with rerank makes such a call on its critical path. ``DirectPost`` does only what
the call needs: one ``sendall`` of request line, headers and body, then a read of the status line, headers and
a ``Content-Length`` or chunked body. Every connect, TLS handshake, send and receive is clamped to the active
``Deadline`` (see ``deadline.py``), so a provider that trickles bytes cannot outlast the call's budget.

The answer is hostile input: the head is capped at 64 KiB and 100 header lines, chunk-size lines at 1 KiB,
and the body at the caller's ``max_bytes``. Anything malformed fails the call as
``httpx.RemoteProtocolError`` and closes its connection. A connection goes back to the pool only after a
complete answer that did not ask to close it, and a pooled connection that has become readable (the server
closed it, or sent bytes nobody asked for) is discarded rather than reused.

Failures raise the httpx exceptions callers already handle (``httpx.TimeoutException`` subclasses,
``httpx.ConnectError``, ``httpx.ReadError``, ...); their messages never carry the URL or any body byte.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

__all__ = ["DirectPost"]

MAX_HEAD_BYTES = 64 * 1024
MAX_HEADER_LINES = 100
MAX_CHUNK_LINE_BYTES = 1024
_READ_SIZE = 64 * 1024
_SEND_SLICE = 64 * 1024
MAX_IDLE_PER_ORIGIN = 8

# ``bound(at, expired, poll)``: the socket timeout for the next operation of a call that must end by ``at``
# (monotonic clock) and by any active ``Deadline``, never 0; with ``poll``, short enough to ask again soon
# whether the caller abandoned the call. Raises ``expired`` once the time is up or the caller gave up.
Bound = Callable[[float, type[httpx.TimeoutException], bool], float]


@dataclass(frozen=True)
class _Origin:
    scheme: str
    host: str
    port: int

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


@dataclass
class _Connection:
    sock: socket.socket
    pending: bytearray = field(default_factory=bytearray)  # bytes received but not yet consumed

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


class DirectPost:
    """POSTs bytes and returns ``(status, body)``; ``body`` is None when it would exceed ``max_bytes``.

    Thread-safe: each call takes a pooled connection (or opens one) for itself and returns it when the answer
    was complete.
    """

    def __init__(self, ssl_context: ssl.SSLContext, bound: Bound) -> None:
        self._ssl = ssl_context
        self._bound = bound
        self._idle: dict[_Origin, list[_Connection]] = {}
        self._lock = threading.Lock()
        self._closed = False

    def post(
        self, url: str, headers: list[tuple[bytes, bytes]], content: bytes, timeout_s: float, max_bytes: int
    ) -> tuple[int, bytes | None]:
        at = time.monotonic() + timeout_s
        origin, target = _split(url)
        request = _request_head(origin, target, headers, len(content)) + content
        conn = self._take(origin) or self._connect(origin, at)
        try:
            self._send(conn, request, at)
            status, body, reusable = self._receive(conn, at, max_bytes)
        except BaseException:
            conn.close()
            raise
        if reusable:
            self._give_back(origin, conn)
        else:
            conn.close()
        return status, body

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for conn in connections:
                conn.close()

    # -- connections -----------------------------------------------------------------------------

    def _take(self, origin: _Origin) -> _Connection | None:
        while True:
            with self._lock:
                pool = self._idle.get(origin)
                if not pool:
                    return None
                conn = pool.pop()
            if _still_usable(conn.sock):
                return conn
            conn.close()

    def _give_back(self, origin: _Origin, conn: _Connection) -> None:
        with self._lock:
            pool = self._idle.setdefault(origin, [])
            if not self._closed and len(pool) < MAX_IDLE_PER_ORIGIN:
                pool.append(conn)
                return
        conn.close()

    def _connect(self, origin: _Origin, at: float) -> _Connection:
        timeout = self._bound(at, httpx.ConnectTimeout, False)
        try:
            sock = socket.create_connection((origin.host, origin.port), timeout=timeout)
        except TimeoutError:
            raise httpx.ConnectTimeout("connect timed out") from None
        except OSError as exc:
            raise httpx.ConnectError(f"connect failed ({type(exc).__name__})") from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if origin.scheme == "https":
                sock.settimeout(self._bound(at, httpx.ConnectTimeout, False))
                sock = self._ssl.wrap_socket(sock, server_hostname=origin.host)
        except BaseException as exc:
            sock.close()
            if isinstance(exc, TimeoutError):
                raise httpx.ConnectTimeout("TLS handshake timed out") from None
            if isinstance(exc, OSError):  # ssl.SSLError included
                raise httpx.ConnectError(f"TLS handshake failed ({type(exc).__name__})") from None
            raise
        return _Connection(sock)

    # -- request and answer ----------------------------------------------------------------------

    def _send(self, conn: _Connection, request: bytes, at: float) -> None:
        view = memoryview(request)
        try:
            for start in range(0, len(view), _SEND_SLICE):
                conn.sock.settimeout(self._bound(at, httpx.WriteTimeout, False))
                conn.sock.sendall(view[start : start + _SEND_SLICE])
        except TimeoutError:
            raise httpx.WriteTimeout("send timed out") from None
        except OSError as exc:
            raise httpx.WriteError(f"send failed ({type(exc).__name__})") from None

    def _fill(self, conn: _Connection, at: float) -> bool:
        """Receive more bytes into ``conn.pending``; False at end of stream."""
        while True:
            conn.sock.settimeout(self._bound(at, httpx.ReadTimeout, True))
            try:
                data = conn.sock.recv(_READ_SIZE)
            except TimeoutError:
                # A slice of a longer wait (the caller may abandon between slices): ``bound`` raises once the
                # deadline has passed or the caller gave up.
                continue
            except OSError as exc:
                raise httpx.ReadError(f"receive failed ({type(exc).__name__})") from None
            if not data:
                return False
            conn.pending += data
            return True

    def _receive(self, conn: _Connection, at: float, max_bytes: int) -> tuple[int, bytes | None, bool]:
        while True:
            status, fields, keep_alive = self._head(conn, at)
            if status >= 200 or status == 101:
                break  # 1xx (e.g. an unasked-for 100 Continue) precedes the real answer
        if status == 101:
            raise httpx.RemoteProtocolError("the server switched protocols")
        if status in (204, 304):
            return status, b"", keep_alive
        encoding = fields.get("transfer-encoding")
        if encoding is not None:
            if encoding.lower() != "chunked":
                raise httpx.RemoteProtocolError("unsupported transfer encoding")
            body = self._chunked(conn, at, max_bytes)
            return status, body, keep_alive and body is not None
        length = fields.get("content-length")
        if length is not None:
            if not length.isdigit() or len(length) > 18:
                raise httpx.RemoteProtocolError("malformed content-length")
            size = int(length)
            if size > max_bytes:
                return status, None, False
            return status, self._exactly(conn, size, at), keep_alive
        return status, self._until_close(conn, at, max_bytes), False

    def _head(self, conn: _Connection, at: float) -> tuple[int, dict[str, str], bool]:
        while (end := conn.pending.find(b"\r\n\r\n")) < 0:
            if len(conn.pending) > MAX_HEAD_BYTES:
                raise httpx.RemoteProtocolError("the answer's head is too large")
            if not self._fill(conn, at):
                raise httpx.RemoteProtocolError("the server closed the connection before answering")
        if end > MAX_HEAD_BYTES:
            raise httpx.RemoteProtocolError("the answer's head is too large")
        head = bytes(conn.pending[:end])
        del conn.pending[: end + 4]
        lines = head.split(b"\r\n")
        if len(lines) > MAX_HEADER_LINES + 1:
            raise httpx.RemoteProtocolError("the answer has too many header lines")
        version, status = _status_line(lines[0])
        fields: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(b":")
            if not sep or not name or name != name.strip():
                raise httpx.RemoteProtocolError("malformed header line")
            key = name.decode("latin-1").lower()
            text = value.strip().decode("latin-1")
            if key in ("content-length", "transfer-encoding") and fields.get(key, text) != text:
                raise httpx.RemoteProtocolError(f"conflicting {key} headers")
            fields[key] = text
        if "content-length" in fields and "transfer-encoding" in fields:
            raise httpx.RemoteProtocolError("both content-length and transfer-encoding")  # request smuggling shape
        tokens = {t.strip().lower() for t in fields.get("connection", "").split(",")}
        keep_alive = version == b"HTTP/1.1" and "close" not in tokens
        return status, fields, keep_alive

    def _exactly(self, conn: _Connection, size: int, at: float) -> bytes:
        while len(conn.pending) < size:
            if not self._fill(conn, at):
                raise httpx.RemoteProtocolError("the server closed the connection mid-answer")
        body = bytes(conn.pending[:size])
        del conn.pending[:size]
        return body

    def _line(self, conn: _Connection, at: float) -> bytes:
        while (end := conn.pending.find(b"\r\n")) < 0:
            if len(conn.pending) > MAX_CHUNK_LINE_BYTES:
                raise httpx.RemoteProtocolError("malformed chunked body")
            if not self._fill(conn, at):
                raise httpx.RemoteProtocolError("the server closed the connection mid-answer")
        if end > MAX_CHUNK_LINE_BYTES:
            raise httpx.RemoteProtocolError("malformed chunked body")
        line = bytes(conn.pending[:end])
        del conn.pending[: end + 2]
        return line

    def _chunked(self, conn: _Connection, at: float, max_bytes: int) -> bytes | None:
        parts: list[bytes] = []
        total = 0
        while True:
            size_text = self._line(conn, at).split(b";", 1)[0].strip()
            if not size_text or len(size_text) > 16 or any(c not in b"0123456789abcdefABCDEF" for c in size_text):
                raise httpx.RemoteProtocolError("malformed chunked body")
            size = int(size_text, 16)
            if size == 0:
                break
            total += size
            if total > max_bytes:
                return None
            parts.append(self._exactly(conn, size, at))
            if self._line(conn, at):
                raise httpx.RemoteProtocolError("malformed chunked body")
        trailers = 0
        while self._line(conn, at):  # trailer fields end with an empty line
            trailers += 1
            if trailers > MAX_HEADER_LINES:
                raise httpx.RemoteProtocolError("the answer has too many trailer lines")
        return b"".join(parts)

    def _until_close(self, conn: _Connection, at: float, max_bytes: int) -> bytes | None:
        while len(conn.pending) <= max_bytes:
            if not self._fill(conn, at):
                return bytes(conn.pending)
        return None


def _split(url: str) -> tuple[_Origin, str]:
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise httpx.UnsupportedProtocol("the provider URL must be http:// or https:// with a host")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise httpx.UnsupportedProtocol("the provider URL has an invalid port") from None
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return _Origin(scheme, parts.hostname, port), target


def _request_head(origin: _Origin, target: str, headers: list[tuple[bytes, bytes]], length: int) -> bytes:
    lines = [f"POST {target} HTTP/1.1".encode("ascii"), b"Host: " + origin.host_header.encode("idna")]
    lines += [name + b": " + value for name, value in headers]
    lines.append(b"Content-Length: " + str(length).encode("ascii"))
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _status_line(line: bytes) -> tuple[bytes, int]:
    version, _, rest = line.partition(b" ")
    code = rest[:3]
    if version not in (b"HTTP/1.1", b"HTTP/1.0") or len(code) != 3 or not code.isdigit() or rest[3:4] not in b" ":
        raise httpx.RemoteProtocolError("malformed status line")
    return version, int(code)


def _still_usable(sock: socket.socket) -> bool:
    """An idle keep-alive socket with something to read has been closed by the server (or holds bytes no
    request asked for): either way it cannot carry the next request."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable
