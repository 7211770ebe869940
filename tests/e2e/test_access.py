"""Principals and per-Scope grants: prepare recalls only the referenced Scopes the caller may read."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import forked
from tests.conftest import REPO_ROOT, LiveServer, live_server
from tests.support import parse_fragments, strict_json

ADMIN, AGENT, OTHER = "admin-token-7Qx", "agent-token-9Lp", "other-token-3Vd"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("access")
    grants = {
        "principals": [
            {"name": "admin", "token_sha256": digest(ADMIN), "read": ["*"], "write": ["*"]},
            {"name": "agent", "token_sha256": "sha256:" + digest(AGENT), "read": ["shared:*"], "write": ["team:a"]},
            {"name": "other", "token_sha256": digest(OTHER), "read": ["team:b"], "write": []},
        ]
    }
    (base / "access.json").write_text(json.dumps(grants), encoding="utf-8")
    with live_server(base, {"POWERCONTEXT_ACCESS_FILE": str(base / "access.json")}) as live:
        admin = client(live, ADMIN)
        for sid, refs in (("shared:docs", []), ("team:b", []), ("team:a", ["shared:docs", "team:b"])):
            assert admin.post("/v1/scopes", json={"scope_id": sid, "title": sid, "context_references": refs}).is_success
            item = {"text": f"grantword memory kept in {sid}", "kind": "fact"}
            assert admin.post(f"/v1/scopes/{sid}/atomic-memory", json=item).status_code == 201
        admin.close()
        yield live


def client(live: LiveServer, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=live.base_url, headers=headers, timeout=30)


def prepare(http: httpx.Client, scope_id: str) -> httpx.Response:
    return http.post("/v1/context/prepare", json={"scope_id": scope_id, "query": "grantword", "include_receipt": True})


def test_prepare_skips_referenced_scopes_the_caller_may_not_read(guarded: LiveServer) -> None:
    with client(guarded, AGENT) as agent:
        r = prepare(agent, "team:a")
        assert r.status_code == 200, r.text
        body: dict[str, Any] = strict_json(r.content)
    cited = {s["artifact_address"]["scope_id"] for s in body["receipt"]["selected"]}
    assert cited == {"team:a", "shared:docs"}
    assert "team:b" not in body["content"]
    assert {f.address["scope_id"] for f in parse_fragments(body["content"])} == cited
    atomic = [g for g in body["receipt"]["retrieval"]["searches"] if g["family"] == "atomic-memory"]
    assert sum(g["count"] for g in atomic) == 2  # team:b was never searched
    with client(guarded, ADMIN) as admin:
        everything = strict_json(prepare(admin, "team:a").content)
    assert {s["artifact_address"]["scope_id"] for s in everything["receipt"]["selected"]} == {
        "team:a",
        "shared:docs",
        "team:b",
    }


def test_a_scope_the_caller_may_not_read_is_refused_whole(guarded: LiveServer) -> None:
    with client(guarded, AGENT) as agent:
        for r in (
            prepare(agent, "team:b"),
            agent.get("/v1/scopes/team:b"),
            agent.post("/v1/scopes/team:b/atomic-memory/search", json={"query": "grantword"}),
        ):
            assert r.status_code == 403, r.text
            assert r.json()["error"]["code"] == "scope-forbidden"
            assert "grantword" not in r.text
        # Reading a Scope is not writing it.
        denied = agent.post("/v1/scopes/shared:docs/atomic-memory", json={"text": "x", "kind": "fact"})
        assert (denied.status_code, denied.json()["error"]["code"]) == (403, "scope-forbidden")
        assert agent.post("/v1/scopes/team:a/atomic-memory", json={"text": "mine", "kind": "fact"}).status_code == 201
        assert agent.post("/v1/scopes", json={"scope_id": "team:c", "title": "t"}).status_code == 403
        listed = {s["scope_id"] for s in agent.get("/v1/scopes").json()["items"]}
        assert listed == {"team:a", "shared:docs"}


def test_a_missing_or_unknown_token_is_401_and_probes_need_none(guarded: LiveServer) -> None:
    for token in (None, "not-a-known-token"):
        with client(guarded, token) as anonymous:
            r = anonymous.get("/v1/scopes")
            assert (r.status_code, r.json()["error"]["code"]) == (401, "unauthenticated")
            assert r.headers["WWW-Authenticate"] == "Bearer"
            assert prepare(anonymous, "team:a").status_code == 401
            assert anonymous.get("/health/ready").status_code == 200


def test_tokens_never_reach_the_log(guarded: LiveServer) -> None:
    log = guarded.log_text()
    for token in (ADMIN, AGENT, OTHER):
        assert token not in log


def test_the_cli_sends_the_token(guarded: LiveServer) -> None:
    def cli(token: str) -> subprocess.CompletedProcess[str]:
        env = {"PATH": "/usr/bin:/bin", "POWERCONTEXT_URL": guarded.base_url, "POWERCONTEXT_TOKEN": token}
        return forked.run(
            [sys.executable, "-m", "powercontext", "scope", "list"],
            capture_output=True,
            text=True,
            env=env,
            cwd=REPO_ROOT,
            timeout=60,
        )

    assert cli(OTHER).stdout.split() == ["team:b", "team:b"]  # id and title
    denied = cli("wrong")
    assert denied.returncode == 1 and "unauthenticated" in denied.stderr


@pytest.mark.parametrize(
    "content",
    ["not json", json.dumps({"principals": []}), json.dumps({"principals": [{"name": "x", "token_sha256": "abc"}]})],
)
def test_a_bad_access_file_stops_the_server_with_one_line(tmp_path: Path, content: str) -> None:
    path = tmp_path / "access.json"
    path.write_text(content, encoding="utf-8")
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
    assert "error: POWERCONTEXT_ACCESS_FILE:" in result.stderr
    assert "Traceback" not in result.stderr
