"""``ProviderClient`` (httpx under a total deadline) against a scripted raw-socket server on loopback: keep-alive
reuse, stale connections, hostile answers mapped to the inference errors, the size cap, and the total deadline
against a provider that trickles its answer."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from powercontext.inference.deadline import Deadline, ProviderClient, abandon_when
from powercontext.inference.errors import InferenceTimeout, InferenceUnavailable

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
        try:
            piece = conn.recv(65536)
        except OSError:  # the client dropped the connection (a malformed answer)
            return None
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
def client(server: ScriptedServer) -> Iterator[ProviderClient]:
    c = ProviderClient(server.url, "embedding", api_key="sk-secret")
    yield c
    c.close()


def test_the_request_is_well_formed_and_the_connection_is_kept_alive(
    server: ScriptedServer, client: ProviderClient
) -> None:
    assert client.post(BODY, 2.0, 1 << 20) == b'{"ok":true}'
    assert client.post(BODY, 2.0, 1 << 20) == b'{"ok":true}'
    assert server.connections == 1
    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    lines = [line.lower() for line in head.split(b"\r\n")]
    assert lines[0] == b"post /v1/embeddings http/1.1"
    assert f"host: 127.0.0.1:{server.port}".encode() in lines
    assert f"content-length: {len(BODY)}".encode() in lines
    assert b"authorization: bearer sk-secret" in lines
    assert b"accept-encoding: identity" in lines
    assert body == BODY


def test_threads_share_one_pool(server: ScriptedServer, client: ProviderClient) -> None:
    answers: list[bytes] = []

    def call() -> None:
        for _ in range(5):
            answers.append(client.post(BODY, 5.0, 1 << 20))

    threads = [threading.Thread(target=call) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == [b'{"ok":true}'] * 20
    assert server.connections <= 4  # at most one connection per concurrent caller, reused across calls


def test_a_chunked_answer_is_reassembled_and_the_connection_reused(
    server: ScriptedServer, client: ProviderClient
) -> None:
    chunked = b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\n{"a"\r\n9\r\n:[1,2,3]}\r\n0\r\n\r\n'
    server.steps = [Step([chunked[i : i + 7] for i in range(0, len(chunked), 7)])]
    assert client.post(BODY, 2.0, 1 << 20) == b'{"a":[1,2,3]}'
    assert client.post(BODY, 2.0, 1 << 20) == b'{"ok":true}'
    assert server.connections == 1


def test_a_keep_alive_connection_the_server_closed_while_idle_is_not_reused(
    server: ScriptedServer, client: ProviderClient
) -> None:
    server.steps = [Step([OK], close=True)]  # answers as keep-alive, then hangs up anyway
    assert client.post(BODY, 2.0, 1 << 20) == b'{"ok":true}'
    time.sleep(0.1)
    assert client.post(BODY, 2.0, 1 << 20) == b'{"ok":true}'
    assert server.connections == 2


def test_an_answer_over_the_size_limit_is_unavailable_and_its_connection_dropped(
    server: ScriptedServer, client: ProviderClient
) -> None:
    big = b"x" * 5000
    server.steps = [
        Step([b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n" + big]),
        Step([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n" + big[:1024] + b"\r\n0\r\n\r\n"]),
        Step([b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + big], close=True),
    ]
    for _ in range(3):
        with pytest.raises(InferenceUnavailable, match=r"^the embedding server answered more than 1,000 bytes$"):
            client.post(BODY, 2.0, 1000)
    assert client.post(BODY, 2.0, 1000) == b'{"ok":true}'
    assert server.connections == 4  # over-limit connections were not pooled


@pytest.mark.parametrize(
    "answer",
    [
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\n{}",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n folded: header\r\nContent-Length: 2\r\n\r\n{}",
        b"SSH-2.0-OpenSSH\r\n\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"X-Filler: " + b"y" * 200_000 + b"\r\n\r\n",
    ],
    ids=["conflicting-lengths", "negative-length", "bad-chunk-size", "folded-header", "not-http", "head-too-large"],
)
def test_a_malformed_answer_is_unavailable_and_its_connection_dropped(
    server: ScriptedServer, client: ProviderClient, answer: bytes
) -> None:
    server.steps = [Step([answer])]
    with pytest.raises(InferenceUnavailable) as failure:
        client.post(BODY, 2.0, 1 << 20)
    assert str(failure.value).startswith("the embedding server could not be reached (")
    assert failure.value.__cause__ is None and failure.value.__suppress_context__
    assert client.post(BODY, 2.0, 1 << 20) == b'{"ok":true}'
    assert server.connections == 2


def test_a_non_2xx_status_is_unavailable_and_a_redirect_is_not_followed(
    server: ScriptedServer, client: ProviderClient
) -> None:
    server.steps = [
        Step([b"HTTP/1.1 500 Oops\r\nContent-Length: 6\r\n\r\nsecret"]),
        Step([b"HTTP/1.1 307 Moved\r\nLocation: http://127.0.0.1:1/x\r\nContent-Length: 0\r\n\r\n"]),
    ]
    with pytest.raises(InferenceUnavailable, match=r"^the embedding server answered HTTP 500$"):
        client.post(BODY, 2.0, 1 << 20)
    with pytest.raises(InferenceUnavailable, match=r"^the embedding server answered HTTP 307$"):
        client.post(BODY, 2.0, 1 << 20)
    assert len(server.requests) == 2


def trickled(pause_s: float) -> Step:
    """The whole answer, status line and headers included, one byte every ``pause_s`` (well within any
    per-read timeout)."""
    return Step([bytes([b]) for b in OK], pause_s=pause_s)


@pytest.mark.timed
def test_the_total_deadline_bounds_an_answer_that_trickles(server: ScriptedServer, client: ProviderClient) -> None:
    server.steps = [trickled(0.1)]  # the whole answer would take ~8 s
    started = time.monotonic()
    with pytest.raises(InferenceTimeout, match=r"^the embedding server did not answer within the timeout$"):
        client.post(BODY, 0.5, 1 << 20)
    assert time.monotonic() - started < 1.5
    assert client.post(BODY, 2.0, 1 << 20) == b'{"ok":true}'  # on a fresh connection
    assert server.connections == 2


@pytest.mark.timed
def test_an_active_deadline_earlier_than_the_timeout_ends_the_call(
    server: ScriptedServer, client: ProviderClient
) -> None:
    server.steps = [trickled(0.1)]
    started = time.monotonic()
    with pytest.raises(InferenceTimeout), Deadline.after(0.4).applied():
        client.post(BODY, 30.0, 1 << 20)
    assert time.monotonic() - started < 1.5
    with pytest.raises(InferenceTimeout), Deadline.after(-1.0).applied():
        client.post(BODY, 30.0, 1 << 20)  # no time left: not even sent
    assert len(server.requests) == 1


@pytest.mark.timed
def test_an_abandoned_call_stops_waiting(server: ScriptedServer, client: ProviderClient) -> None:
    server.steps = [trickled(0.1)]
    give_up = threading.Event()
    threading.Timer(0.3, give_up.set).start()
    started = time.monotonic()
    with pytest.raises(InferenceTimeout), abandon_when(give_up.is_set):
        client.post(BODY, 30.0, 1 << 20)
    assert time.monotonic() - started < 2.0


def test_a_server_that_closes_before_answering_is_unavailable(server: ScriptedServer, client: ProviderClient) -> None:
    server.steps = [Step([], close=True)]
    with pytest.raises(InferenceUnavailable, match=r"\(RemoteProtocolError\)$"):
        client.post(BODY, 2.0, 1 << 20)


def test_nothing_listening_is_unavailable_without_the_url() -> None:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    client = ProviderClient(f"http://127.0.0.1:{port}/v1/embeddings", "generation")
    try:
        with pytest.raises(InferenceUnavailable) as failure:
            client.post(BODY, 2.0, 1 << 20)
    finally:
        client.close()
    assert str(failure.value) == "the generation server could not be reached (ConnectError)"
