"""The provider transport's direct POST against a scripted raw-socket server on loopback: framing, keep-alive
reuse, stale connections, hostile answers, and the total deadline."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from powercontext.inference.deadline import Deadline, DeadlineTransport

HEADERS = [(b"content-type", b"application/json")]
BODY = b'{"model":"m","input":["hello"]}'
OK = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}'


@dataclass
class Step:
    """What the server does with one request: send ``answer`` (in pieces, ``pause_s`` apart), then maybe close."""

    answer: list[bytes]
    close: bool = False
    pause_s: float = 0.0


@dataclass
class ScriptedServer:
    port: int
    steps: list[Step]
    requests: list[bytes] = field(default_factory=list)
    connections: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/embeddings"


def _read_request(conn: socket.socket) -> bytes | None:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            return None
        data += piece
    head, _, rest = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    while len(rest) < length:
        rest += conn.recv(65536)
    return head + b"\r\n\r\n" + rest


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    state = ScriptedServer(listener.getsockname()[1], [])

    def serve(conn: socket.socket) -> None:
        with conn:
            while (request := _read_request(conn)) is not None:
                state.requests.append(request)
                step = state.steps.pop(0) if state.steps else Step([OK])
                try:
                    for piece in step.answer:
                        conn.sendall(piece)
                        time.sleep(step.pause_s)
                except OSError:
                    return
                if step.close:
                    return

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            state.connections += 1
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    yield state
    listener.close()


@pytest.fixture
def transport() -> Iterator[DeadlineTransport]:
    t = DeadlineTransport()
    yield t
    t.close()


def post(transport: DeadlineTransport, server: ScriptedServer, max_bytes: int = 1 << 20) -> tuple[int, bytes | None]:
    with Deadline.after(2.0).applied():
        return transport.post(server.url, HEADERS, BODY, 2.0, max_bytes)


def test_the_request_is_well_formed_and_the_connection_is_kept_alive(
    server: ScriptedServer, transport: DeadlineTransport
) -> None:
    assert post(transport, server) == (200, b'{"ok":true}')
    assert post(transport, server) == (200, b'{"ok":true}')
    assert server.connections == 1
    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /v1/embeddings HTTP/1.1"
    assert f"Host: 127.0.0.1:{server.port}".encode() in lines
    assert f"Content-Length: {len(BODY)}".encode() in lines
    assert body == BODY


def test_a_chunked_answer_with_extensions_and_trailers_is_reassembled(
    server: ScriptedServer, transport: DeadlineTransport
) -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'4;ext=1\r\n{"a"\r\n9\r\n:[1,2,3]}\r\n0\r\nX-Trailer: t\r\n\r\n'
    )
    # The answer arrives in small pieces: framing must not depend on how the bytes are split.
    server.steps = [Step([chunked[i : i + 7] for i in range(0, len(chunked), 7)])]
    assert post(transport, server) == (200, b'{"a":[1,2,3]}')
    assert post(transport, server) == (200, b'{"ok":true}')
    assert server.connections == 1


def test_an_informational_answer_before_the_real_one_is_skipped(
    server: ScriptedServer, transport: DeadlineTransport
) -> None:
    server.steps = [Step([b"HTTP/1.1 100 Continue\r\n\r\n" + OK])]
    assert post(transport, server) == (200, b'{"ok":true}')


def test_connection_close_and_a_body_read_to_the_end_of_the_stream(
    server: ScriptedServer, transport: DeadlineTransport
) -> None:
    server.steps = [
        Step([b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}"]),
        Step([b"HTTP/1.0 200 OK\r\n\r\n[1,2]"], close=True),
    ]
    assert post(transport, server) == (200, b"{}")
    assert post(transport, server) == (200, b"[1,2]")
    assert post(transport, server) == (200, b'{"ok":true}')
    assert server.connections == 3


def test_a_keep_alive_connection_the_server_closed_while_idle_is_not_reused(
    server: ScriptedServer, transport: DeadlineTransport
) -> None:
    server.steps = [Step([OK], close=True)]  # answers as keep-alive, then hangs up anyway
    assert post(transport, server) == (200, b'{"ok":true}')
    time.sleep(0.1)
    assert post(transport, server) == (200, b'{"ok":true}')
    assert server.connections == 2


def test_an_answer_over_the_size_limit_returns_no_body(server: ScriptedServer, transport: DeadlineTransport) -> None:
    big = b"x" * 5000
    server.steps = [
        Step([b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + big]),
        Step(
            [
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                + b"400\r\n"
                + big[:1024]
                + b"\r\n" * 1
                + b"0\r\n\r\n"
            ]
        ),
        Step([b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + big], close=True),
    ]
    assert post(transport, server, max_bytes=1000) == (200, None)
    assert post(transport, server, max_bytes=1000) == (200, None)
    assert post(transport, server, max_bytes=1000) == (200, None)
    assert post(transport, server, max_bytes=1000) == (200, b'{"ok":true}')  # over-limit connections were dropped


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}XX0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n folded: header\r\nContent-Length: 2\r\n\r\n{}",
        b"HTTP/2 200 OK\r\nContent-Length: 2\r\n\r\n{}",
        b"SSH-2.0-OpenSSH\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"X-Filler: " + b"y" * 70_000 + b"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 150 + b"Content-Length: 2\r\n\r\n{}",
    ],
    ids=[
        "length-and-chunked",
        "conflicting-lengths",
        "negative-length",
        "unknown-encoding",
        "bad-chunk-size",
        "chunk-without-crlf",
        "folded-header",
        "http2-status-line",
        "not-http",
        "head-over-64k",
        "too-many-headers",
    ],
)
def test_a_malformed_answer_is_a_protocol_error_and_its_connection_is_dropped(
    server: ScriptedServer, transport: DeadlineTransport, answer: bytes
) -> None:
    server.steps = [Step([answer])]
    with pytest.raises(httpx.RemoteProtocolError):
        post(transport, server)
    assert post(transport, server) == (200, b'{"ok":true}')
    assert server.connections == 2


def test_the_total_deadline_bounds_an_answer_that_trickles(
    server: ScriptedServer, transport: DeadlineTransport
) -> None:
    # Each piece arrives well within any per-read timeout; the whole answer would take ~3 s.
    server.steps = [Step([bytes([b]) for b in OK], pause_s=3.0 / len(OK))]
    started = time.monotonic()
    with pytest.raises(httpx.TimeoutException), Deadline.after(0.5).applied():
        transport.post(server.url, HEADERS, BODY, 10.0, 1 << 20)
    assert time.monotonic() - started < 1.0


def test_a_server_that_closes_before_answering_is_a_protocol_error(
    server: ScriptedServer, transport: DeadlineTransport
) -> None:
    server.steps = [Step([], close=True)]
    with pytest.raises(httpx.RemoteProtocolError):
        post(transport, server)


def test_nothing_listening_is_a_connect_error(transport: DeadlineTransport) -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    with pytest.raises(httpx.ConnectError), Deadline.after(2.0).applied():
        transport.post(f"http://127.0.0.1:{port}/v1/embeddings", HEADERS, BODY, 2.0, 1 << 20)
