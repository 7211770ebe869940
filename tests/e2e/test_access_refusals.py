"""With an access file, refusals leak nothing: a caller without a token learns nothing from a broken body,
and a caller cannot tell a Scope it may not read from a Scope that does not exist.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import LiveServer, live_server
from tests.support import REQUEST_ID_HEADER, unique

ADMIN, AGENT, READER = "admin-token-R2d", "agent-token-K8w", "reader-token-P4q"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("refusals")
    grants = {
        "principals": [
            {"name": "admin", "token_sha256": digest(ADMIN), "read": ["*"], "write": ["*"]},
            {"name": "agent", "token_sha256": digest(AGENT), "read": ["shared:*"], "write": ["team:*"]},
            {"name": "reader", "token_sha256": digest(READER), "read": ["team:*"], "write": []},
        ]
    }
    (base / "access.json").write_text(json.dumps(grants), encoding="utf-8")
    with live_server(base, {"POWERCONTEXT_ACCESS_FILE": str(base / "access.json")}) as live:
        with client(live, ADMIN) as admin:
            for sid in ("shared:docs", "secret:plans"):
                assert admin.post("/v1/scopes", json={"scope_id": sid, "title": sid}).status_code == 201
        yield live


def client(live: LiveServer, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=live.base_url, headers=headers, timeout=30)


def envelope(response: httpx.Response) -> tuple[int, str, str]:
    """Status, code and message: everything of an error answer but its request id."""
    body: dict[str, Any] = response.json()
    assert set(body) == {"error"} and body["error"]["request_id"] == response.headers[REQUEST_ID_HEADER]
    return response.status_code, body["error"]["code"], body["error"]["message"]


BROKEN_BODIES = [
    pytest.param(b'{"scope_id": "team:a", "query": ', id="truncated-json"),
    pytest.param(b"\xff\xfe not utf-8", id="not-utf8"),
    pytest.param(b'{"unknown": 1}', id="schema-invalid"),
]
ROUTES = [
    ("POST", "/v1/context/prepare"),
    ("POST", "/v1/scopes"),
    ("PUT", "/v1/scopes/team:a"),
    ("POST", "/v1/scopes/team:a/atomic-memory"),
    ("POST", "/v1/scopes/team:a/atomic-memory/batch"),
    ("POST", "/v1/scopes/team:a/topic-memory/search"),
]


@pytest.mark.parametrize("raw", BROKEN_BODIES)
@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_no_token_and_a_broken_body_is_401(guarded: LiveServer, method: str, path: str, raw: bytes) -> None:
    headers = {"Content-Type": "application/json"}
    with client(guarded, None) as anonymous:
        r = anonymous.request(method, path, content=raw, headers=headers)
    assert envelope(r)[:2] == (401, "unauthenticated"), r.text
    assert r.headers["WWW-Authenticate"] == "Bearer"
    with client(guarded, "not-a-listed-token") as stranger:
        assert stranger.request(method, path, content=raw, headers=headers).status_code == 401


def test_every_documented_v1_operation_answers_401_before_reading_a_broken_body(guarded: LiveServer) -> None:
    with client(guarded, None) as anonymous:
        document = anonymous.get("/openapi.json").json()
        checked = 0
        for template, operations in document["paths"].items():
            if not template.startswith("/v1/") or template == "/v1/capabilities":
                continue
            path = template.replace("{scope_id}", "team:a").replace("{", "").replace("}", "")
            for method in operations:
                r = anonymous.request(
                    method.upper(), path, content=b"{not json", headers={"Content-Type": "application/json"}
                )
                assert r.status_code == 401, (method, template, r.text)
                checked += 1
    assert checked >= 25


def test_a_broken_body_to_a_scope_without_a_grant_is_403_and_with_one_422(guarded: LiveServer) -> None:
    raw, headers = b'{"text": ', {"Content-Type": "application/json"}
    with client(guarded, READER) as reader:  # may read team:*, not write it
        r = reader.post("/v1/scopes/team:a/atomic-memory", content=raw, headers=headers)
        assert envelope(r)[:2] == (403, "scope-forbidden")
    with client(guarded, AGENT) as agent:
        r = agent.post("/v1/scopes/team:a/atomic-memory", content=raw, headers=headers)
        assert envelope(r)[:2] == (422, "invalid-request")
    with client(guarded, None) as anonymous:  # probes still need no token
        assert anonymous.get("/health/live").status_code == 200


def test_a_forbidden_and_a_missing_reference_answer_alike_on_create(guarded: LiveServer) -> None:
    with client(guarded, AGENT) as agent:
        answers = []
        for ref in ("secret:plans", "secret:does-not-exist"):  # the first exists, the agent may not read it
            sid = unique("team:create")
            body = {"scope_id": sid, "title": "t", "context_references": ["shared:docs", ref]}
            r = agent.post("/v1/scopes", json=body)
            answers.append(envelope(r))
            assert agent.get(f"/v1/scopes/{sid}").status_code == 404  # nothing was created
        assert answers[0] == answers[1]
        assert answers[0][:2] == (404, "referenced-scope-not-found")
        assert "context_references[1]" in answers[0][2]
        assert "secret" not in answers[0][2]
        readable = agent.post(
            "/v1/scopes", json={"scope_id": unique("team:ok"), "title": "t", "context_references": ["shared:docs"]}
        )
        assert readable.status_code == 201, readable.text


def test_a_forbidden_and_a_missing_reference_answer_alike_on_update(guarded: LiveServer) -> None:
    sid = unique("team:update")
    with client(guarded, AGENT) as agent:
        assert agent.post("/v1/scopes", json={"scope_id": sid, "title": "t"}).status_code == 201
        path = f"/v1/scopes/{sid}"
        forbidden = envelope(agent.put(path, json={"title": "t", "context_references": ["secret:plans"]}))
        missing = envelope(agent.put(path, json={"title": "t", "context_references": ["secret:gone"]}))
        assert forbidden == missing
        assert forbidden[:2] == (404, "referenced-scope-not-found")
        # The Scope itself missing is another code, so the two cannot be confused.
        absent = envelope(agent.put(f"/v1/scopes/{unique('team:absent')}", json={"title": "t"}))
        assert absent[:2] == (404, "scope-not-found")


def test_reads_hide_unreadable_references_and_updates_keep_them(guarded: LiveServer) -> None:
    sid = unique("team:mixed")
    with client(guarded, ADMIN) as admin, client(guarded, AGENT) as agent:
        body = {"scope_id": sid, "title": "t", "context_references": ["secret:plans", "shared:docs"]}
        assert admin.post("/v1/scopes", json=body).status_code == 201
        assert agent.get(f"/v1/scopes/{sid}").json()["context_references"] == ["shared:docs"]
        listed = {s["scope_id"]: s for s in agent.get("/v1/scopes").json()["items"]}
        assert listed[sid]["context_references"] == ["shared:docs"]
        assert "secret:plans" not in agent.get("/v1/scopes").text

        r = agent.put(f"/v1/scopes/{sid}", json={"title": "renamed", "context_references": ["shared:docs"]})
        assert r.status_code == 200, r.text
        assert r.json()["context_references"] == ["shared:docs"]
        # The reference the agent could not see survives its update.
        assert admin.get(f"/v1/scopes/{sid}").json()["context_references"] == ["shared:docs", "secret:plans"]


def test_without_an_access_file_a_missing_reference_is_named_as_a_reference(server: LiveServer) -> None:
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        r = http.post("/v1/scopes", json={"scope_id": unique("open"), "title": "t", "context_references": ["nope"]})
        assert envelope(r)[:2] == (404, "referenced-scope-not-found")
