"""The MCP server driven by the SDK's own client: over stdio (``powercontext mcp``) and over streamable
HTTP at ``/mcp`` on a real Server with bearer tokens."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.code_support import make_git_repo
from tests.conftest import REPO_ROOT, LiveServer, code_roots_for_tests, live_server
from tests.support import Api, unique

EXPECTED_TOOLS = {
    "scope_list",
    "capabilities",
    "memory_add",
    "memory_search",
    "memory_get",
    "memory_get_revision",
    "memory_forget",
    "memory_retire",
    "topic_create",
    "topic_search",
    "topic_get",
    "experience_candidate_add",
    "profile_get",
    "code_query",
    "memory_candidates_list",
    "memory_candidate_decide",
    "source_list",
    "source_get",
}
WRITER, READER = "mcp-writer-token-1", "mcp-reader-token-2"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@asynccontextmanager
async def stdio_client(url: str, token: str | None = None) -> AsyncIterator[Client]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    if token:
        env["POWERCONTEXT_TOKEN"] = token
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "powercontext", "mcp", "--url", url], env=env, cwd=str(REPO_ROOT)
    )
    async with Client(params) as client:
        yield client


@asynccontextmanager
async def http_client(url: str, token: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url + "/mcp", http_client=http)) as client,
    ):
        yield client


async def call(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def tool_error(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    error: dict[str, Any] = json.loads(text[text.index("{") :])["error"]
    return error


async def round_trip(client: Client, api: Api, scope_id: str, work_tree: Path) -> None:
    """One call per tool, each checked against what the HTTP API says."""
    caps = await call(client, "capabilities", {})
    assert caps == api.get("/v1/capabilities").json()

    added = await call(client, "memory_add", {"scope_id": scope_id, "text": "Payouts retry 3 times", "kind": "fact"})
    ref = added["artifact_address"]["artifact"]
    assert api.head(scope_id, ref["artifact_id"]).json()["text"] == "Payouts retry 3 times"
    hits = await call(client, "memory_search", {"scope_id": scope_id, "query": "payouts retry"})
    assert [h["artifact_address"]["artifact"]["artifact_id"] for h in hits["hits"]] == [ref["artifact_id"]]
    head = await call(client, "memory_get", {"scope_id": scope_id, "artifact_id": ref["artifact_id"]})
    assert head["text"] == "Payouts retry 3 times"
    exact = {"scope_id": scope_id, "artifact_id": ref["artifact_id"], "revision": 1}
    assert (await call(client, "memory_get_revision", exact))["artifact_address"]["artifact"]["revision"] == 1
    forgotten = await call(client, "memory_forget", {"scope_id": scope_id, "artifact_id": ref["artifact_id"]})
    assert forgotten["state"] == "forgotten"
    assert api.hit_ids(scope_id, "payouts retry") == []
    assert (await call(client, "memory_get_revision", exact))["text"] == "Payouts retry 3 times"  # still readable
    other = await call(client, "memory_add", {"scope_id": scope_id, "text": "Old cron host", "kind": "state"})
    other_id = other["artifact_address"]["artifact"]["artifact_id"]
    retired = await call(client, "memory_retire", {"scope_id": scope_id, "artifact_id": other_id})
    assert retired["state"] == "retired"

    topic = await call(client, "topic_create", {"scope_id": scope_id, "title": "Settlement", "body": "Nightly batch"})
    topic_id = topic["artifact_address"]["artifact"]["artifact_id"]
    found = await call(client, "topic_search", {"scope_id": scope_id, "query": "settlement"})
    assert topic_id in json.dumps(found)
    assert (await call(client, "topic_get", {"scope_id": scope_id, "artifact_id": topic_id}))["title"] == "Settlement"

    candidate = await call(
        client,
        "experience_candidate_add",
        {"scope_id": scope_id, "situation": "flaky CI", "what_worked": "retry once", "what_to_avoid": "sleeping"},
    )
    assert candidate["status"] == "pending"
    shown = api.get(f"/v1/scopes/{scope_id}/experience/candidates/{candidate['candidate_id']}").json()
    assert shown["situation"] == "flaky CI"

    entries = [{"key": "language", "value": "Python 3.11"}]
    assert api.put(f"/v1/scopes/{scope_id}/profile", {"entries": entries}).status_code == 200
    profile = await call(client, "profile_get", {"scope_id": scope_id})
    assert profile == api.get(f"/v1/scopes/{scope_id}/profile").json()

    assert api.post(f"/v1/scopes/{scope_id}/code/index", {"path": str(work_tree)}).status_code == 200
    code = await call(client, "code_query", {"scope_id": scope_id, "query": "parse_webhook_payload"})
    assert code == api.post(f"/v1/scopes/{scope_id}/code/query", {"query": "parse_webhook_payload"}).json()
    assert code["hits"], "the indexed function is found"

    listed = await call(client, "memory_candidates_list", {"scope_id": scope_id})
    assert listed == api.get(f"/v1/scopes/{scope_id}/memory-candidates").json()
    decide = {"scope_id": scope_id, "candidate_id": "mc_none", "decision": "approve"}
    assert (await tool_error(client, "memory_candidate_decide", decide))["code"] == "candidate-not-found"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("mcp-access")
    grants = {
        "principals": [
            {"name": "writer", "token_sha256": digest(WRITER), "read": ["*"], "write": ["mcp:*"], "index": ["mcp:*"]},
            {"name": "reader", "token_sha256": digest(READER), "read": ["mcp:public"], "write": []},
        ]
    }
    (base / "access.json").write_text(json.dumps(grants), encoding="utf-8")
    settings = {"POWERCONTEXT_ACCESS_FILE": str(base / "access.json"), **code_roots_for_tests(tmp_path_factory)}
    with live_server(base, settings) as live:
        with httpx.Client(base_url=live.base_url, headers={"Authorization": f"Bearer {WRITER}"}) as http:
            for sid in ("mcp:public", "mcp:private"):
                assert http.post("/v1/scopes", json={"scope_id": sid, "title": sid}).status_code == 201
        yield live


def test_tool_list_over_stdio_has_no_prepare(server: LiveServer) -> None:
    async def go() -> set[str]:
        async with stdio_client(server.base_url) as client:
            return {t.name for t in (await client.list_tools()).tools}

    names = anyio.run(go)
    assert names == EXPECTED_TOOLS
    assert not any("prepare" in name for name in names)


def test_every_tool_round_trips_over_stdio(server: LiveServer, api: Api, tmp_path: Path) -> None:
    scope_id = api.new_scope(prefix="mcp-stdio")
    work_tree = make_git_repo(tmp_path / "repo")

    async def go() -> None:
        async with stdio_client(server.base_url) as client:
            await round_trip(client, api, scope_id, work_tree)
            error = await tool_error(client, "memory_add", {"scope_id": scope_id, "text": "x", "kind": "bogus"})
            assert (error["code"], error["status"]) == ("invalid-request", 422)
            error = await tool_error(client, "memory_get", {"scope_id": unique("none"), "artifact_id": "am_x"})
            assert error["code"] == "scope-not-found"

    anyio.run(go)


def test_every_tool_round_trips_over_http_with_a_token(guarded: LiveServer, tmp_path: Path) -> None:
    scope_id = "mcp:" + unique("rt")
    admin = Api(guarded.base_url)
    admin.http.headers["Authorization"] = f"Bearer {WRITER}"
    assert admin.post("/v1/scopes", {"scope_id": scope_id, "title": "rt"}).status_code == 201
    work_tree = make_git_repo(tmp_path / "repo")

    async def go() -> None:
        async with http_client(guarded.base_url, WRITER) as client:
            assert {t.name for t in (await client.list_tools()).tools} == EXPECTED_TOOLS
            await round_trip(client, admin, scope_id, work_tree)

    try:
        anyio.run(go)
    finally:
        admin.close()


def test_a_token_that_may_not_read_a_scope_is_refused(guarded: LiveServer) -> None:
    async def go() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with http_client(guarded.base_url, READER) as client:
            allowed = await call(client, "memory_search", {"scope_id": "mcp:public", "query": "anything"})
            denied = await tool_error(client, "memory_search", {"scope_id": "mcp:private", "query": "anything"})
            write = await tool_error(client, "memory_add", {"scope_id": "mcp:public", "text": "x", "kind": "fact"})
            return allowed, denied, write

    allowed, denied, write = anyio.run(go)
    assert allowed["hits"] == []
    assert (denied["code"], denied["status"]) == ("scope-forbidden", 403)
    assert (write["code"], write["status"]) == ("scope-forbidden", 403)

    async def over_stdio() -> dict[str, Any]:
        async with stdio_client(guarded.base_url, READER) as client:
            return await tool_error(client, "memory_get", {"scope_id": "mcp:private", "artifact_id": "am_x"})

    assert anyio.run(over_stdio)["code"] == "scope-forbidden"


def test_mcp_endpoint_needs_a_known_token(guarded: LiveServer) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"Accept": "application/json, text/event-stream"}
    for token in (None, "not-a-known-token"):
        sent = {**headers, **({"Authorization": f"Bearer {token}"} if token else {})}
        r = httpx.post(guarded.base_url + "/mcp", json=initialize, headers=sent, timeout=30)
        assert r.status_code == 401
        assert r.json()["error"]["code"] == "unauthenticated"
        assert r.headers["X-PowerContext-Request-ID"] == r.json()["error"]["request_id"]
    ok = httpx.post(
        guarded.base_url + "/mcp", json=initialize, headers={**headers, "Authorization": f"Bearer {READER}"}, timeout=30
    )
    assert ok.status_code == 200, ok.text


async def listed_tools(client: Client) -> dict[str, Any]:
    return {t.name: t.model_dump(by_alias=True, exclude_none=True) for t in (await client.list_tools()).tools}


def test_tools_describe_themselves_the_same_way_over_both_transports(guarded: LiveServer) -> None:
    async def go() -> tuple[dict[str, Any], dict[str, Any], Any, Any]:
        async with stdio_client(guarded.base_url, WRITER) as stdio, http_client(guarded.base_url, WRITER) as http:
            return (
                await listed_tools(stdio),
                await listed_tools(http),
                stdio.server_capabilities,
                http.server_capabilities,
            )

    over_stdio, over_http, stdio_init, http_init = anyio.run(go)
    assert over_stdio == over_http
    assert set(over_stdio) == EXPECTED_TOOLS
    for name, tool in over_stdio.items():
        hints = tool["annotations"]
        assert hints["title"] and tool["title"], name
        assert {"readOnlyHint", "destructiveHint", "idempotentHint"} <= set(hints), name
        for prop, schema in tool["inputSchema"]["properties"].items():
            assert schema.get("description"), f"{name}.{prop} has no description"
    assert over_stdio["memory_search"]["annotations"]["readOnlyHint"] is True
    assert over_stdio["memory_forget"]["annotations"]["destructiveHint"] is True
    assert over_stdio["memory_add"]["annotations"]["readOnlyHint"] is False
    kind = over_stdio["memory_add"]["inputSchema"]["properties"]["kind"]
    assert kind["enum"] == ["decision", "constraint", "fact", "state", "next-step", "outcome", "note"]
    search = over_stdio["memory_search"]["inputSchema"]["properties"]
    assert search["mode"]["enum"] == ["auto", "fts", "vector", "hybrid"]
    assert (search["limit"]["minimum"], search["limit"]["maximum"]) == (1, 50)
    for advertised in (stdio_init, http_init):
        capabilities = advertised.model_dump(exclude_none=True)
        assert "tools" in capabilities
        assert "resources" not in capabilities and "prompts" not in capabilities


def test_scope_list_names_the_scopes_the_token_may_read(guarded: LiveServer) -> None:
    async def go(token: str) -> set[str]:
        async with stdio_client(guarded.base_url, token) as client:
            listed = await call(client, "scope_list", {})
            return {item["scope_id"] for item in listed["items"]}

    assert anyio.run(go, READER) == {"mcp:public"}
    assert {"mcp:public", "mcp:private"} <= anyio.run(go, WRITER)


def test_errors_name_what_an_mcp_client_can_do(server: LiveServer, api: Api) -> None:
    scope_id = api.new_scope(prefix="mcp-errors")

    async def go() -> list[dict[str, Any]]:
        async with stdio_client(server.base_url) as client:
            return [
                await tool_error(client, "memory_get", {"scope_id": unique("none"), "artifact_id": "am_x"}),
                await tool_error(client, "profile_get", {"scope_id": scope_id}),
                await tool_error(client, "memory_search", {"scope_id": scope_id, "query": "x", "surprise": 1}),
            ]

    missing_scope, missing_profile, unknown_argument = anyio.run(go)
    assert missing_scope["code"] == "scope-not-found"
    assert "scope_list" in missing_scope["message"] and "powercontext scope create" in missing_scope["message"]
    assert missing_profile["code"] == "artifact-not-found"
    assert "powercontext profile set" in missing_profile["message"]
    assert unknown_argument["code"] == "invalid-request" and "surprise" in unknown_argument["message"]
    for error in (missing_scope, missing_profile, unknown_argument):
        assert "/v1/" not in error["message"]


def test_get_on_the_mcp_endpoint_is_refused_at_once(server: LiveServer, guarded: LiveServer) -> None:
    headers = {"Accept": "text/event-stream"}
    answered = httpx.get(server.base_url + "/mcp", headers=headers, timeout=5)
    assert answered.status_code == 405
    assert answered.headers["allow"] == "POST"
    assert answered.json()["error"]["code"] == "method-not-allowed"
    with_token = {**headers, "Authorization": f"Bearer {READER}"}
    assert httpx.get(guarded.base_url + "/mcp", headers=with_token, timeout=5).status_code == 405


@pytest.mark.timed
def test_stdio_server_exits_on_sigint_within_a_second(server: LiveServer) -> None:
    import signal
    import subprocess
    import time

    process = subprocess.Popen(
        [sys.executable, "-m", "powercontext", "mcp", "--url", server.base_url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        process.stdin.write(json.dumps(request).encode() + b"\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 1  # serving, stdin still open
        sent = time.monotonic()
        process.send_signal(signal.SIGINT)
        process.wait(timeout=5)
        assert time.monotonic() - sent <= 1.0
        assert b"Traceback" not in (process.stderr.read() if process.stderr else b"")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
