"""Request bodies: the token is checked before a body is read, and no body over the largest valid request to its
route is read or kept, whether it declares its length or streams chunked; a client that writes a whole oversized
body before reading gets the 413. Real Server processes, raw sockets and httpx."""

from __future__ import annotations

import hashlib
import http.client
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psutil
import pytest

from tests.conftest import LiveServer, live_server
from tests.http_raw import RawAnswer, chunked, filler, send_until_answered
from tests.support import REQUEST_ID_HEADER, unique

TOKEN = "limits-token-5Rk"
READER_TOKEN = "limits-reader-9Qe"
HUNDRED_MB = 100 * 1024 * 1024
BATCH = "POST /v1/scopes/{scope_id}/atomic-memory/batch"
PREPARE = "POST /v1/context/prepare"
PROFILE = "PUT /v1/scopes/{scope_id}/profile"


def largest_valid_batch() -> bytes:
    """Built here from the published limits, the longest way a standard JSON encoder writes it."""
    item = {
        "text": "\x07" * 8000,  # 8,000 UTF-8 bytes, each written as a six-byte \u0007
        "kind": "constraint",  # the longest kind
        "tags": ["\U0001d11e" * 64] * 32,  # 32 tags of 64 characters, each a twelve-byte surrogate pair
        "idempotency_key": "\\" * 128,  # 128 printable characters, each written as \\
    }
    return json.dumps({"items": [item] * 500}, ensure_ascii=True, indent=4).encode("ascii")


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("limits")) as live:
        yield live


@pytest.fixture(scope="module")
def guarded_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("limits-access")
    digest = hashlib.sha256(TOKEN.encode("utf-8")).hexdigest()
    reader_digest = hashlib.sha256(READER_TOKEN.encode("utf-8")).hexdigest()
    grants = {
        "principals": [
            {"name": "writer", "token_sha256": digest, "read": ["*"], "write": ["*"]},
            {"name": "reader", "token_sha256": reader_digest, "read": ["*"], "write": []},
        ]
    }
    (base / "access.json").write_text(json.dumps(grants), encoding="utf-8")
    with live_server(base, {"POWERCONTEXT_ACCESS_FILE": str(base / "access.json")}) as live:
        yield live


def request_limit(live: LiveServer, route: str = BATCH, token: str | None = None) -> int:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    limits = httpx.get(live.base_url + "/v1/capabilities", headers=headers, timeout=10).json()["limits"]
    return int(limits["route_max_bytes"][route])


def rss(live: LiveServer) -> int:
    return int(psutil.Process(live.process.pid).memory_info().rss)


def assert_error(answer: RawAnswer, status: int, code: str) -> None:
    assert answer.status == status, answer.body[:300]
    error = answer.json()["error"]
    assert set(error) == {"code", "message", "request_id"}
    assert error["code"] == code
    assert error["request_id"] == answer.headers[REQUEST_ID_HEADER.lower()]


def test_the_largest_valid_request_fits_and_one_byte_more_does_not(open_server: LiveServer) -> None:
    limit = request_limit(open_server)
    body = largest_valid_batch()
    assert len(body) <= limit
    # Parsed and validated in full: the answer is about the (missing) Scope, not the size.
    r = httpx.post(
        f"{open_server.base_url}/v1/scopes/{unique('absent')}/atomic-memory/batch",
        content=body,
        headers={"content-type": "application/json"},
        timeout=120,
    )
    assert (r.status_code, r.json()["error"]["code"]) == (404, "scope-not-found"), r.text[:300]
    # One byte over: refused on the declared length alone, with not one body byte sent.
    answer = send_until_answered(
        open_server.base_url,
        "POST",
        f"/v1/scopes/{unique('s')}/atomic-memory/batch",
        {"content-type": "application/json", "content-length": str(limit + 1)},
    )
    assert_error(answer, 413, "body-too-large")
    assert str(limit) in answer.json()["error"]["message"]
    assert answer.sent == 0 and answer.headers.get("connection") == "close"


def test_a_chunked_body_is_refused_once_it_passes_the_limit(open_server: LiveServer) -> None:
    limit = request_limit(open_server, PREPARE)
    answer = send_until_answered(
        open_server.base_url,
        "POST",
        "/v1/context/prepare",
        {"content-type": "application/json", "transfer-encoding": "chunked"},
        chunked(HUNDRED_MB),
    )
    assert_error(answer, 413, "body-too-large")
    # It stopped reading at the limit: what was sent beyond it sits in socket buffers (a few MB at most).
    assert limit < answer.sent < limit + 16 * 1024 * 1024, answer.sent


def test_a_small_chunked_body_is_read_whole(open_server: LiveServer) -> None:
    scope_id = unique("chunked")
    payload = json.dumps({"scope_id": scope_id, "title": "sent in pieces"}).encode("utf-8")
    pieces = [payload[i : i + 7] for i in range(0, len(payload), 7)]
    framed = iter([b"%x\r\n" % len(p) + p + b"\r\n" for p in pieces] + [b"0\r\n\r\n"])
    headers = {"content-type": "application/json", "transfer-encoding": "chunked"}
    answer = send_until_answered(open_server.base_url, "POST", "/v1/scopes", headers, framed)
    assert answer.status == 201, answer.body
    assert httpx.get(f"{open_server.base_url}/v1/scopes/{scope_id}", timeout=10).json()["title"] == "sent in pieces"


@pytest.mark.timed
def test_an_unauthenticated_body_is_refused_before_it_is_read(guarded_server: LiveServer) -> None:
    before = rss(guarded_server)
    # 100 MB announced, none sent: the 401 can only come from headers.
    answer = send_until_answered(
        guarded_server.base_url,
        "POST",
        "/v1/context/prepare",
        {"content-type": "application/json", "content-length": str(HUNDRED_MB)},
    )
    assert_error(answer, 401, "unauthenticated")
    assert answer.headers["www-authenticate"] == "Bearer"
    assert answer.sent == 0 and answer.elapsed_s < 1.0
    # Streamed for real, chunked and then with a length: refused at once, nothing buffered.
    for headers, body in (
        ({"transfer-encoding": "chunked"}, chunked(HUNDRED_MB)),
        ({"content-length": str(HUNDRED_MB)}, filler(HUNDRED_MB)),
    ):
        answer = send_until_answered(
            guarded_server.base_url,
            "POST",
            "/v1/context/prepare",
            {"content-type": "application/json", "authorization": "Bearer wrong", **headers},
            body,
        )
        assert_error(answer, 401, "unauthenticated")
        assert answer.sent < 16 * 1024 * 1024 and answer.elapsed_s < 2.0
    assert rss(guarded_server) - before < 5 * 1024 * 1024
    # A malformed body without a token is a 401 too: the token comes first.
    r = httpx.post(guarded_server.base_url + "/v1/context/prepare", content=b"{not json", timeout=10)
    assert (r.status_code, r.json()["error"]["code"]) == (401, "unauthenticated")


def test_the_limit_applies_to_authenticated_callers(guarded_server: LiveServer) -> None:
    limit = request_limit(guarded_server, PREPARE, TOKEN)
    answer = send_until_answered(
        guarded_server.base_url,
        "POST",
        "/v1/context/prepare",
        {"content-type": "application/json", "content-length": str(limit + 1), "authorization": f"Bearer {TOKEN}"},
    )
    assert_error(answer, 413, "body-too-large")


def test_four_concurrent_oversized_bodies_leave_memory_where_it_was(tmp_path: Path) -> None:
    with live_server(tmp_path) as live:
        for _ in range(3):  # warm the routes once, so idle includes what any first request allocates
            httpx.post(live.base_url + "/v1/context/prepare", json={"scope_id": "w", "query": "q"}, timeout=10)
        idle = rss(live)
        answers: list[RawAnswer] = []

        def upload(framing: str) -> None:
            headers = {"content-type": "application/json"}
            if framing == "chunked":
                headers["transfer-encoding"] = "chunked"
                body = chunked(HUNDRED_MB)
            else:
                headers["content-length"] = str(HUNDRED_MB)
                body = filler(HUNDRED_MB)
            answers.append(send_until_answered(live.base_url, "POST", "/v1/context/prepare", headers, body))

        for framing in ("chunked", "length"):
            threads = [threading.Thread(target=upload, args=(framing,)) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=120)
        assert [a.status for a in answers] == [413] * 8
        time.sleep(0.5)
        grown = rss(live) - idle
        assert grown < 20 * 1024 * 1024, f"RSS grew by {grown / 2**20:.1f} MiB"


def largest_valid_prepare() -> bytes:
    sections = [{"family": f, "limit": n} for f, n in (("memory", 8), ("topic-memory", 8), ("experience", 2))]
    body = {
        "scope_id": "\U0001d11e" * 256,  # 256 characters, each a twelve-byte surrogate pair
        "query": "\U0001d11e" * 8192,
        "max_bytes": 32768,
        "assembly": {"sections": [*sections, {"family": "profile", "limit": 8}]},
        "include_code": False,
        "include_receipt": False,
    }
    return json.dumps(body, ensure_ascii=True, indent=4).encode("ascii")


def largest_valid_profile() -> bytes:
    entries = [{"key": chr(0x1F600 + i) * 100, "value": "\x07" * 2000} for i in range(64)]
    return json.dumps({"entries": entries, "expected_revision": 2**31 - 1}, ensure_ascii=True, indent=4).encode()


def test_each_route_reads_at_most_its_largest_valid_request(open_server: LiveServer) -> None:
    limits = httpx.get(open_server.base_url + "/v1/capabilities", timeout=10).json()["limits"]
    routes = limits["route_max_bytes"]
    assert limits["request_max_bytes"] == max(routes.values()) == routes[BATCH]
    assert "GET /v1/scopes" not in routes  # a route without a body takes none
    # A tiny request (a lifecycle change is some 60 bytes) still gets room for formatting: the floor is 64 KiB.
    assert routes["POST /v1/scopes/{scope_id}/topic-memory/{artifact_id}/lifecycle"] == 65536
    prepare, profile = largest_valid_prepare(), largest_valid_profile()
    # The published limits are the largest valid requests, built here from the documented field bounds.
    assert 0 <= routes[PREPARE] - len(prepare) < 64  # the limit counts the longest family name in every section
    assert routes[PROFILE] == len(profile)
    assert 90_000 < routes[PREPARE] < 110_000 and 800_000 < routes[PROFILE] < 1_000_000
    scope_id = unique("limits")
    assert (
        httpx.post(
            f"{open_server.base_url}/v1/scopes", json={"scope_id": scope_id, "title": "limits"}, timeout=10
        ).status_code
        == 201
    )
    headers = {"content-type": "application/json"}
    r = httpx.put(f"{open_server.base_url}/v1/scopes/{scope_id}/profile", content=profile, headers=headers, timeout=60)
    # Parsed and validated whole: the answer is about the revision, not the size or the shape.
    assert (r.status_code, r.json()["error"]["code"]) == (409, "revision-conflict"), r.text[:300]
    r = httpx.post(f"{open_server.base_url}/v1/context/prepare", content=prepare, headers=headers, timeout=60)
    assert r.status_code in (200, 404), r.text[:300]  # read and answered, whatever the (absent) Scope
    # One byte more than a route's limit is refused on the declared length, though the batch would take it.
    for method, path, route in (
        ("POST", "/v1/context/prepare", PREPARE),
        ("PUT", f"/v1/scopes/{scope_id}/profile", PROFILE),
    ):
        headers = {"content-type": "application/json", "content-length": str(routes[route] + 1)}
        answer = send_until_answered(open_server.base_url, method, path, headers)
        assert_error(answer, 413, "body-too-large")
        assert str(routes[route]) in answer.json()["error"]["message"] and answer.sent == 0


def post_whole_body_then_read(live: LiveServer, path: str, size: int) -> tuple[int, dict[str, str], bytes]:
    """What the standard library's client does: the whole body goes out before the answer is read."""
    url = urlsplit(live.base_url)
    connection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=60)
    try:
        connection.request("POST", path, body=b" " * size, headers={"content-type": "application/json"})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def test_a_client_that_writes_its_whole_oversized_body_first_gets_the_413(open_server: LiveServer) -> None:
    prepare_limit = request_limit(open_server, PREPARE)
    batch_limit = request_limit(open_server, BATCH)
    for path, size in (
        ("/v1/context/prepare", 2 * prepare_limit),
        ("/v1/context/prepare", 20 * prepare_limit),  # more than socket buffers hold: closing at once resets
        (f"/v1/scopes/{unique('s')}/atomic-memory/batch", batch_limit + 16 * 1024 * 1024),
    ):
        status, headers, body = post_whole_body_then_read(open_server, path, size)
        assert (status, json.loads(body)["error"]["code"]) == (413, "body-too-large"), size
        assert headers["connection"] == "close"
        r = httpx.post(
            open_server.base_url + path, content=b" " * size, headers={"content-type": "application/json"}, timeout=60
        )
        assert (r.status_code, r.json()["error"]["code"]) == (413, "body-too-large")


def test_a_large_invalid_body_is_answered_like_a_small_one(open_server: LiveServer) -> None:
    items = [{"text": "x" * 8000, "kind": "fact"} for _ in range(500)]
    items[499] = {"text": "fine", "kind": "fact", "colour": "blue"}
    url = f"{open_server.base_url}/v1/scopes/{unique('s')}/atomic-memory/batch"
    r = httpx.post(url, json={"items": items}, timeout=60)
    assert (r.status_code, r.json()["error"]["code"]) == (422, "invalid-request")
    assert "items.499: unknown field" in r.json()["error"]["message"] and "colour" not in r.text
    r = httpx.post(url, content=b'{"items": [' + b" " * (2 << 20), headers={"content-type": "application/json"})
    assert (r.status_code, r.json()["error"]["message"]) == (422, "the request body is not valid JSON")


def test_a_reader_cannot_make_the_server_parse_a_large_body(guarded_server: LiveServer) -> None:
    body = largest_valid_batch()
    headers = {"content-type": "application/json", "authorization": f"Bearer {READER_TOKEN}"}
    url = f"{guarded_server.base_url}/v1/scopes/{unique('s')}/atomic-memory/batch"
    r = httpx.post(url, content=body, headers=headers, timeout=60)
    assert (r.status_code, r.json()["error"]["code"]) == (403, "scope-forbidden")


def test_a_largest_batch_parsed_in_pieces_is_written_whole_or_not_at_all(open_server: LiveServer) -> None:
    # Decoded and parsed a piece at a time off the event loop: every item arrives intact, in order, and a
    # body broken far past the first piece writes nothing.
    scope_id = unique("big")
    with httpx.Client(base_url=open_server.base_url, timeout=120) as client:
        assert client.post("/v1/scopes", json={"scope_id": scope_id, "title": "big"}).status_code == 201
        items = [
            {
                "text": f"{i:03d}" + "\x07\u00e9" * 2600,
                "kind": "constraint",
                "tags": [f"t{i}"] + [f"{k:02d}" + "\U0001d11e" * 62 for k in range(31)],
                "idempotency_key": f"{i:03d}" + "\\" * 125,
            }
            for i in range(500)
        ]
        body = json.dumps({"items": items}, ensure_ascii=True, indent=4).encode("ascii")
        assert len(body) > 25 * 1024 * 1024
        path = f"/v1/scopes/{scope_id}/atomic-memory/batch"
        broken = body[: len(body) - 1000] + b"]}"  # the last item cut short
        r = client.post(path, content=broken, headers={"content-type": "application/json"})
        assert (r.status_code, r.json()["error"]["message"]) == (422, "the request body is not valid JSON")
        assert client.get(f"/v1/scopes/{scope_id}/atomic-memory").json()["items"] == []
        r = client.post(path, content=body, headers={"content-type": "application/json"})
        assert r.status_code == 201, r.text[:300]
        created = r.json()["items"]
        assert len(created) == 500 and not any(item["replayed"] for item in created)
        page = client.get(f"/v1/scopes/{scope_id}/atomic-memory", params={"limit": 200}).json()
        newest = page["items"][0]
        assert (newest["text"], newest["tags"]) == (items[499]["text"], items[499]["tags"])
        assert page["next_cursor"] is not None
