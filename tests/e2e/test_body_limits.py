"""Request bodies: the token is checked before a body is read, and no body over the largest valid request is
read or kept, whether it declares its length or streams chunked. Real Server processes, raw sockets."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest

from tests.conftest import LiveServer, live_server
from tests.http_raw import RawAnswer, chunked, filler, send_until_answered
from tests.support import REQUEST_ID_HEADER, unique

TOKEN = "limits-token-5Rk"
HUNDRED_MB = 100 * 1024 * 1024


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
    grants = {"principals": [{"name": "writer", "token_sha256": digest, "read": ["*"], "write": ["*"]}]}
    (base / "access.json").write_text(json.dumps(grants), encoding="utf-8")
    with live_server(base, {"POWERCONTEXT_ACCESS_FILE": str(base / "access.json")}) as live:
        yield live


def request_limit(live: LiveServer, token: str | None = None) -> int:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    limits = httpx.get(live.base_url + "/v1/capabilities", headers=headers, timeout=10).json()["limits"]
    return int(limits["request_max_bytes"])


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
    limit = request_limit(open_server)
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
    limit = request_limit(guarded_server)
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
