"""With an access file, ``/metrics`` needs a token with the ``metrics`` grant, and no data-bearing route answers
anything before the token check (no 404, 405 or 422 to a caller without a token)."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests import forked
from tests.conftest import REPO_ROOT, LiveServer, live_server
from tests.support import REQUEST_ID_HEADER

ADMIN, SCRAPER = "admin-token-M3t", "scraper-token-Pr0m"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("metrics-access")
    grants = {
        "principals": [
            {"name": "admin", "token_sha256": digest(ADMIN), "read": ["*"], "write": ["*"], "index": ["*"]},
            {"name": "prometheus", "token_sha256": digest(SCRAPER), "metrics": True},
        ]
    }
    (base / "access.json").write_text(json.dumps(grants), encoding="utf-8")
    with live_server(base, {"POWERCONTEXT_ACCESS_FILE": str(base / "access.json")}) as live:
        with client(live, ADMIN) as admin:
            assert admin.post("/v1/scopes", json={"scope_id": "team:m", "title": "m"}).status_code == 201
        yield live


def client(live: LiveServer, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=live.base_url, headers=headers, timeout=30)


def error_of(r: httpx.Response) -> tuple[int, str]:
    body = r.json()
    assert body["error"]["request_id"] == r.headers[REQUEST_ID_HEADER]
    return r.status_code, body["error"]["code"]


def test_metrics_need_a_token_with_the_metrics_grant(guarded: LiveServer) -> None:
    for token in (None, "not-a-known-token"):
        with client(guarded, token) as anonymous:
            r = anonymous.get("/metrics")
            assert error_of(r) == (401, "unauthenticated")
            assert r.headers["WWW-Authenticate"] == "Bearer"
            assert "powercontext_" not in r.text
    with client(guarded, ADMIN) as admin:  # every Scope, but not the metrics
        refused = admin.get("/metrics")
        assert error_of(refused) == (403, "metrics-forbidden")
        assert '"metrics": true' in refused.json()["error"]["message"]
    with client(guarded, SCRAPER) as scraper:
        r = scraper.get("/metrics")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
        assert "powercontext_http_request_duration_seconds" in r.text
        # The grant is about metrics only: no Scope is readable with it.
        assert error_of(scraper.get("/v1/scopes/team:m")) == (403, "scope-forbidden")
        assert scraper.get("/v1/scopes").json()["items"] == []


def test_without_a_token_nothing_answers_before_the_token_check(guarded: LiveServer) -> None:
    requests: list[tuple[str, str, bytes | None]] = [
        ("GET", "/v1/scopes/team:does-not-exist", None),  # would be 404 scope-not-found
        ("GET", "/v1/no-such-route", None),  # would be 404 not-found
        ("GET", "/no-such-route", None),
        ("DELETE", "/v1/scopes", None),  # would be 405
        ("POST", "/v1/context/prepare", b"{broken"),  # would be 422
        ("POST", "/v1/context/prepare", b'{"scope_id": "team:m"}'),  # would be 422 (no query)
        ("GET", "/v1/scopes/team:m/code/snippet", None),  # would be 422 (no parameters)
        ("GET", "/v1/scopes/team:m/artifacts/atomic-memory/am_missing", None),
        ("POST", "/mcp", b"{}"),
        ("GET", "/metrics", None),
    ]
    with client(guarded, None) as anonymous:
        for method, path, body in requests:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            r = anonymous.request(method, path, content=body, headers=headers)
            assert error_of(r) == (401, "unauthenticated"), (method, path, r.text)
        # What holds no data needs no token.
        for public in ("/health/live", "/health/ready", "/v1/capabilities", "/openapi.json", "/inspector"):
            assert anonymous.get(public).status_code == 200, public


def test_a_metrics_grant_that_is_not_a_boolean_stops_the_server(tmp_path: Path) -> None:
    path = tmp_path / "access.json"
    principal = {"name": "p", "token_sha256": digest(SCRAPER), "metrics": "yes"}
    path.write_text(json.dumps({"principals": [principal]}), encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "POWERCONTEXT_ACCESS_FILE": str(path)}
    result = forked.run(
        [sys.executable, "-m", "powercontext", "server", "run", "--db", str(tmp_path / "x.db")],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=60,
    )
    assert result.returncode == 2
    assert "error: POWERCONTEXT_ACCESS_FILE: principal 0: metrics must be true or false" in result.stderr
    assert "Traceback" not in result.stderr
