"""One bounded HTTP/1.1 POST over a plain socket (fast to import, every limit explicit).

``http.client`` is not used: importing it (with ``ssl`` and the ``email`` parser) costs a hook process
about 40 ms of CPU before it sends a byte. ``ssl`` is imported only for an ``https`` URL.

* a total deadline: the request runs in a daemon thread that the caller abandons at the deadline, and
  every socket operation also times out at the time that remains;
* no redirects (a 3xx is an answer, and the recall layer rejects it);
* the body is read up to ``max_body`` bytes plus one, so an oversized answer is detected without
  buffering it; the request says ``Connection: close``, so the answer ends at its length or at EOF.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import Any, NamedTuple
from urllib.parse import urlsplit

from powercontext.server_url import BadServerUrl, check_server_url

MAX_RESPONSE_BYTES = 1024 * 1024
MAX_HEADER_BYTES = 64 * 1024


class TransportFailure(Exception):
    """No usable answer: ``kind`` is ``unavailable``, ``timeout``, ``too_large``, ``bad_http`` or ``bad_url``."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class HttpAnswer(NamedTuple):
    status: int
    content_type: str
    body: bytes


class _Deadline:
    def __init__(self, at: float) -> None:
        self.at = at

    def remaining(self) -> float:
        left = self.at - time.monotonic()
        if left <= 0:
            raise TransportFailure("timeout")
        return left


def _connect(url: str, deadline: _Deadline) -> tuple[socket.socket, str, str]:
    try:
        parts = urlsplit(check_server_url(url))
    except BadServerUrl:
        raise TransportFailure("bad_url") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TransportFailure("bad_url")
    secure = parts.scheme == "https"
    try:
        port = parts.port or (443 if secure else 80)
    except ValueError:
        raise TransportFailure("bad_url") from None
    # An ASCII host goes to getaddrinfo as bytes: a str would load the ``idna`` codec (and ``unicodedata``).
    address = parts.hostname.encode("ascii") if parts.hostname.isascii() else parts.hostname
    sock = socket.create_connection((address, port), timeout=deadline.remaining())  # type: ignore[arg-type]
    if secure:
        import ssl

        sock = ssl.create_default_context().wrap_socket(sock, server_hostname=parts.hostname)
    host = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
    if ":" in parts.hostname:  # IPv6 literal
        host = f"[{parts.hostname}]" + ("" if parts.port is None else f":{parts.port}")
    return sock, host, parts.path.rstrip("/")


def _recv(sock: socket.socket, deadline: _Deadline) -> bytes:
    sock.settimeout(deadline.remaining())
    return sock.recv(65536)


def _dechunk(raw: bytes, max_body: int) -> bytes:
    out = bytearray()
    pos = 0
    while True:
        line_end = raw.find(b"\r\n", pos)
        if line_end < 0:
            raise TransportFailure("bad_http")
        try:
            size = int(raw[pos:line_end].split(b";")[0].strip(), 16)
        except ValueError:
            raise TransportFailure("bad_http") from None
        if size == 0:
            return bytes(out)
        start = line_end + 2
        out += raw[start : start + size]
        if len(out) > max_body:
            raise TransportFailure("too_large")
        pos = start + size + 2


def _post(
    url: str, path: str, payload: bytes, headers: dict[str, str], deadline: _Deadline, max_body: int
) -> HttpAnswer:
    sock: socket.socket | None = None
    try:
        sock, host, base_path = _connect(url, deadline)
        lines = [f"POST {base_path + path} HTTP/1.1", f"Host: {host}", f"Content-Length: {len(payload)}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        sock.settimeout(deadline.remaining())
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload)
        buffer = b""
        while b"\r\n\r\n" not in buffer:
            chunk = _recv(sock, deadline)
            if not chunk:
                raise TransportFailure("bad_http" if buffer else "unavailable")
            buffer += chunk
            if len(buffer) > MAX_HEADER_BYTES + max_body:
                raise TransportFailure("bad_http")
        head, _, body = buffer.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise TransportFailure("bad_http")
        answer_headers: dict[str, str] = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            answer_headers[name.strip().lower()] = value.strip()
        chunked = "chunked" in answer_headers.get("transfer-encoding", "").lower()
        length_text = answer_headers.get("content-length")
        length = int(length_text) if length_text and length_text.isdigit() and not chunked else None
        if length is not None and length > max_body:
            raise TransportFailure("too_large")
        # Read to the declared length, else to EOF (Connection: close), never past the cap.
        cap = max_body + 1 if not chunked else max_body + MAX_HEADER_BYTES
        while (length is None or len(body) < length) and len(body) <= cap:
            if chunked and (body == b"0\r\n\r\n" or body.endswith(b"\r\n0\r\n\r\n")):
                break  # the last chunk arrived (even if the server keeps the connection open)
            chunk = _recv(sock, deadline)
            if not chunk:
                break
            body += chunk
        if chunked:
            body = _dechunk(body, max_body)
        elif length is not None:
            if len(body) < length:
                raise TransportFailure("bad_http")
            body = body[:length]
        if len(body) > max_body:
            raise TransportFailure("too_large")
        return HttpAnswer(int(parts[1]), answer_headers.get("content-type", ""), body)
    except TimeoutError:
        raise TransportFailure("timeout") from None
    except OSError:
        if time.monotonic() >= deadline.at:
            raise TransportFailure("timeout") from None
        raise TransportFailure("unavailable") from None
    finally:
        if sock is not None:
            sock.close()


def post_json(
    url: str,
    path: str,
    body: dict[str, Any],
    *,
    token: str | None,
    timeout_s: float,
    max_body: int = MAX_RESPONSE_BYTES,
) -> HttpAnswer:
    """POST ``body`` as JSON to ``url + path``; the whole exchange ends within ``timeout_s`` seconds."""
    deadline = _Deadline(time.monotonic() + timeout_s)
    headers = {"Content-Type": "application/json", "Accept": "application/json", "Connection": "close"}
    if token:
        if any(ord(c) < 0x21 or ord(c) > 0x7E for c in token):
            raise TransportFailure("bad_url")  # a token must be one visible-ASCII word (no header injection)
        headers["Authorization"] = f"Bearer {token}"
    payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
    outcome: list[HttpAnswer | TransportFailure] = []

    def run() -> None:
        try:
            outcome.append(_post(url, path, payload, headers, deadline, max_body))
        except TransportFailure as exc:
            outcome.append(exc)
        except Exception:  # any other failure is still "no answer"
            outcome.append(TransportFailure("unavailable"))

    worker = threading.Thread(target=run, name="powercontext-hook-http", daemon=True)
    worker.start()
    worker.join(max(0.0, deadline.at - time.monotonic()))
    if worker.is_alive() or not outcome:
        raise TransportFailure("timeout")
    result = outcome[0]
    if isinstance(result, TransportFailure):
        raise result
    return result
