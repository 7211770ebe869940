"""The edges of HTTP handling, on a real Server over raw sockets: framing uvicorn refuses is recorded as the 400 the
client got (never a phantom 500), a compressed or non-JSON body is a 415, and a JSON body that ``json.loads`` takes
but no client means (a number past Python's digit limit, a key given twice) is a 422 naming the field."""

from __future__ import annotations

import gzip
import json
import re
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from tests.conftest import LiveServer, live_server
from tests.http_raw import RawAnswer, send_until_answered
from tests.support import REQUEST_ID_HEADER, wait_until

SCOPE = "team:edges"
PREPARE = "/v1/context/prepare"


@pytest.fixture(scope="module")
def edges(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("http-edges")) as live:
        created = httpx.post(live.base_url + "/v1/scopes", json={"scope_id": SCOPE, "title": "edges"}, timeout=30)
        assert created.status_code == 201, created.text
        yield live


def raw_exchange(live: LiveServer, request: bytes) -> bytes:
    """Sends ``request`` as is and reads until the server closes the connection."""
    url = urlsplit(live.base_url)
    assert url.hostname is not None and url.port is not None
    received = b""
    with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
        sock.sendall(request)
        while piece := sock.recv(65536):
            received += piece
    return received


def head(live: LiveServer, method: str, target: str, *headers: str) -> bytes:
    host = urlsplit(live.base_url).netloc
    return "\r\n".join([f"{method} {target} HTTP/1.1", f"Host: {host}", *headers, "", ""]).encode("latin-1")


def counted(live: LiveServer, route: str, method: str, status: int) -> int:
    """The request count ``/metrics`` holds for these labels (0 before the first)."""
    wanted = {"route": route, "method": method, "status": str(status)}
    text = httpx.get(live.base_url + "/metrics", timeout=10).text
    for labels, value in re.findall(r"^powercontext_http_request_duration_seconds_count\{(.*)\} (\S+)$", text, re.M):
        if dict(re.findall(r'(\w+)="([^"]*)"', labels)) == wanted:
            return int(float(value))
    return 0


def post(live: LiveServer, path: str, body: bytes, headers: dict[str, str]) -> RawAnswer:
    return send_until_answered(live.base_url, "POST", path, {"Content-Length": str(len(body)), **headers}, iter([body]))


def error_of(answer: RawAnswer) -> tuple[int, str, str]:
    error = answer.json()["error"]
    assert error["request_id"] == answer.headers[REQUEST_ID_HEADER.lower()]
    return answer.status, error["code"], error["message"]


# -- 1: framing uvicorn refuses ----------------------------------------------------------------------------


@pytest.mark.parametrize("coding", ["identity", "gzip"])
def test_framing_uvicorn_refuses_is_recorded_as_the_400_the_client_got(edges: LiveServer, coding: str) -> None:
    before = {status: counted(edges, "unmatched", "POST", status) for status in (400, 500)}
    body = b'{"scope_id": "team:x", "title": "x"}'
    request = head(edges, "POST", "/v1/scopes", "Content-Type: application/json", f"Transfer-Encoding: {coding}")
    answer = raw_exchange(edges, request + body)
    assert answer.startswith(b"HTTP/1.1 400 ") and answer.endswith(b"Invalid HTTP request received."), answer
    # The app had started (uvicorn hands it the request at the end of the head); the access line comes once the
    # app saw the connection end.
    assert wait_until(lambda: counted(edges, "unmatched", "POST", 400) == before[400] + 1), before
    assert counted(edges, "unmatched", "POST", 500) == before[500]
    log = edges.log_text()
    assert "status=500" not in log
    assert "method=POST route=unmatched status=400" in log


def test_a_body_longer_than_its_content_length_is_answered_then_refused(edges: LiveServer) -> None:
    body = b'{"scope_id": "team:y", "title": "y"}'
    request = head(edges, "POST", "/v1/scopes", "Content-Type: application/json", "Content-Length: 5")
    answer = raw_exchange(edges, request + body)
    # The first five bytes are the request (not JSON: 422); the rest is not a request at all (uvicorn's 400, which
    # may reach the client before the app's 422, and then alone: the connection is closed after it).
    assert answer.startswith((b"HTTP/1.1 422 ", b"HTTP/1.1 400 ")), answer
    assert answer.endswith(b"Invalid HTTP request received."), answer
    log = edges.log_text()
    assert "status=500" not in log and "route=/v1/scopes status=422" in log


def test_a_request_target_past_64_kib_is_refused_by_uvicorn_before_the_app(edges: LiveServer) -> None:
    # httptools cannot parse a URL longer than 65,535 bytes: uvicorn answers its own plain-text 400 and the app
    # never sees the request, so nothing is logged or counted for it (docs/operations.md, "Errors").
    answer = raw_exchange(edges, head(edges, "GET", "/v1/scopes?q=" + "a" * 100_000, "Connection: close"))
    assert answer.startswith(b"HTTP/1.1 400 ") and answer.endswith(b"Invalid HTTP request received."), answer
    fits = raw_exchange(edges, head(edges, "GET", "/v1/scopes?q=" + "a" * 60_000, "Connection: close"))
    assert fits.startswith(b"HTTP/1.1 200 "), fits[:200]
    assert "status=500" not in edges.log_text()


# -- 2: what a JSON route takes ----------------------------------------------------------------------------

BODY = json.dumps({"scope_id": SCOPE, "query": "deploy"}).encode("utf-8")


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        (gzip.compress(BODY), {"Content-Type": "application/json", "Content-Encoding": "gzip"}),
        (BODY, {"Content-Type": "application/json", "Content-Encoding": "br"}),
        (BODY, {"Content-Type": "application/json", "Content-Encoding": "deflate, identity"}),
    ],
    ids=["gzip", "br-but-plain", "deflate-identity"],
)
def test_a_body_with_a_content_encoding_is_refused_415(edges: LiveServer, body: bytes, headers: dict[str, str]) -> None:
    status, code, message = error_of(post(edges, PREPARE, body, headers))
    assert (status, code) == (415, "unsupported-media-type")
    assert "uncompressed" in message and "Content-Encoding" in message
    assert headers["Content-Encoding"] not in message  # the caller's header is not repeated


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_body_that_is_not_declared_json_is_refused_415(edges: LiveServer, content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    status, code, message = error_of(post(edges, PREPARE, BODY, headers))
    assert (status, code) == (415, "unsupported-media-type")
    assert "application/json" in message


@pytest.mark.parametrize(
    "headers",
    [
        {"Content-Type": "application/json"},
        {"Content-Type": "application/json; charset=utf-8"},
        {"Content-Type": "Application/JSON"},
        {"Content-Type": "application/json", "Content-Encoding": "identity"},
    ],
)
def test_json_bodies_are_taken_as_before(edges: LiveServer, headers: dict[str, str]) -> None:
    answer = post(edges, PREPARE, BODY, headers)
    assert answer.status == 200, answer.body[:300]


def test_a_request_without_a_body_is_not_asked_for_a_content_type(edges: LiveServer) -> None:
    answer = send_until_answered(edges.base_url, "GET", f"/v1/scopes/{SCOPE}", {"Content-Type": "text/plain"})
    assert answer.status == 200, answer.body[:300]


# -- 3: JSON that parses but means nothing -----------------------------------------------------------------


def test_a_number_past_the_digit_limit_is_out_of_range_for_its_field(edges: LiveServer) -> None:
    body = f'{{"scope_id": "{SCOPE}", "query": "deploy", "max_bytes": {"9" * 5000}}}'.encode("ascii")
    status, code, message = error_of(post(edges, PREPARE, body, {"Content-Type": "application/json"}))
    assert (status, code) == (422, "invalid-request")
    assert message == "max_bytes: Input should be less than or equal to 32768", message
    negative = body.replace(b": 999", b": -999")
    _, _, message = error_of(post(edges, PREPARE, negative, {"Content-Type": "application/json"}))
    assert message.startswith("max_bytes: Input should be greater than or equal to "), message


def test_a_key_given_twice_is_refused_naming_the_key(edges: LiveServer) -> None:
    body = b'{"scope_id": "team:edges", "query": "first", "query": "second"}'
    status, code, message = error_of(post(edges, PREPARE, body, {"Content-Type": "application/json"}))
    assert (status, code, message) == (422, "invalid-request", "query: given more than once; send each key once")
    nested = b'{"items": [{"text": "a"}, {"text": "first", "text": "second"}]}'
    batch = f"/v1/scopes/{SCOPE}/atomic-memory/batch"
    _, _, message = error_of(post(edges, batch, nested, {"Content-Type": "application/json"}))
    assert message == "items.1.text: given more than once; send each key once", message


def test_an_unknown_key_given_twice_is_not_repeated(edges: LiveServer) -> None:
    body = b'{"scope_id": "team:edges", "query": "q", "secret-ish": 1, "secret-ish": 2}'
    status, code, message = error_of(post(edges, PREPARE, body, {"Content-Type": "application/json"}))
    assert (status, code) == (422, "invalid-request")
    assert message == "body: a key is given more than once; send each key once", message


def large_batch(odd_item: str, count: int = 200) -> bytes:
    """A batch over 1 MiB (parsed in steps on a worker thread), its item 150 written as given."""
    item = json.dumps({"text": "deploy " + "x" * 6000, "kind": "fact"})
    items = [odd_item if i == 150 else item for i in range(count)]
    body = ('{"items": [' + ", ".join(items) + "]}").encode("ascii")
    assert len(body) > 1 << 20
    return body


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (large_batch('{"text": "first", "kind": "fact", "text": "second"}'), "items.150.text: given more than once"),
        (
            large_batch('{"text": "a", "kind": "fact"}').replace(b'{"items"', b'{"items": [], "items"', 1),
            "items: given",
        ),
        (large_batch('{"text": "a", "kind": ' + "7" * 5000 + "}"), "items.150.kind: Input should be "),
    ],
    ids=["item-key", "top-key", "long-number"],
)
def test_a_large_body_is_refused_as_a_small_one(edges: LiveServer, body: bytes, said: str) -> None:
    batch = f"/v1/scopes/{SCOPE}/atomic-memory/batch"
    status, code, message = error_of(post(edges, batch, body, {"Content-Type": "application/json"}))
    assert (status, code) == (422, "invalid-request")
    assert message.startswith(said), message


def test_a_large_encoded_body_is_refused_before_it_is_read(edges: LiveServer) -> None:
    batch = f"/v1/scopes/{SCOPE}/atomic-memory/batch"
    body = large_batch('{"text": "a", "kind": "fact"}')
    status, code, _ = error_of(post(edges, batch, body, {"Content-Type": "application/json", "Content-Encoding": "br"}))
    assert (status, code) == (415, "unsupported-media-type")
