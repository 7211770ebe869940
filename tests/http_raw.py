"""Raw HTTP/1.1 over a socket, for what httpx will not do: send headers without the body they announce,
stream a body until the server answers mid-upload, and see exactly how much was sent before it did."""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit


@dataclass
class RawAnswer:
    status: int
    headers: dict[str, str]
    body: bytes
    sent: int  # body bytes the client had handed to the kernel when the answer arrived
    elapsed_s: float
    extra: dict[str, Any] = field(default_factory=dict)

    def json(self) -> Any:
        return json.loads(self.body)


def chunked(total: int, piece: int = 1 << 20) -> Iterator[bytes]:
    """``total`` bytes of a JSON-ish filler in chunked transfer coding, ``piece`` bytes per chunk."""
    data = b"x" * piece
    left = total
    while left > 0:
        size = min(piece, left)
        yield b"%x\r\n" % size + data[:size] + b"\r\n"
        left -= size
    yield b"0\r\n\r\n"


def filler(total: int, piece: int = 1 << 20) -> Iterator[bytes]:
    data = b"x" * piece
    left = total
    while left > 0:
        yield data[: min(piece, left)]
        left -= piece


def send_until_answered(
    base_url: str,
    method: str,
    path: str,
    headers: dict[str, str],
    body: Iterator[bytes] = iter(()),
    timeout_s: float = 60.0,
) -> RawAnswer:
    """Send the head, then body pieces while the server reads; stop sending as soon as it answers."""
    url = urlsplit(base_url)
    assert url.hostname is not None and url.port is not None
    head = f"{method} {path} HTTP/1.1\r\nHost: {url.hostname}:{url.port}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items()) + "\r\n"
    started = time.perf_counter()
    deadline = time.monotonic() + timeout_s
    sent = 0
    with socket.create_connection((url.hostname, url.port), timeout=timeout_s) as sock:
        sock.sendall(head.encode("latin-1"))
        sock.setblocking(False)
        pending = memoryview(next(body, b""))
        while time.monotonic() < deadline:
            writers = [sock] if pending else []
            readable, writable, _ = select.select([sock], writers, [], 0.5)
            if readable:
                break
            if writable:
                try:
                    n = sock.send(pending)
                except (BrokenPipeError, ConnectionResetError):
                    break
                sent += n
                pending = pending[n:]
                if not pending:
                    pending = memoryview(next(body, b""))
        sock.setblocking(True)
        sock.settimeout(max(0.1, deadline - time.monotonic()))
        raw = _read_answer(sock)
    elapsed = time.perf_counter() - started
    head_bytes, _, rest = raw.partition(b"\r\n\r\n")
    lines = head_bytes.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    answer_headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(answer_headers.get("content-length", len(rest)))
    return RawAnswer(status, answer_headers, rest[:length], sent, elapsed)


def _read_answer(sock: socket.socket) -> bytes:
    data = b""
    while True:
        try:
            piece = sock.recv(65536)
        except ConnectionResetError:
            break
        if not piece:
            break
        data += piece
        head, sep, rest = data.partition(b"\r\n\r\n")
        if sep:
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length" and len(rest) >= int(value):
                    return data
    return data
