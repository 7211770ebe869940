"""What the MCP servers tell an agent when a call cannot go through: the missing grant, the allowed values of an
argument, a URL that is not one, an integer written as ``5.0``, a batch or an id JSON-RPC forbids. Real parts
only: ``powercontext mcp`` as a process, ``/mcp`` on a real Server, the SDK's client."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest

from powercontext.mcp.catalog import TOOLS
from tests.conftest import REPO_ROOT, LiveServer, live_server
from tests.e2e.test_mcp import call, digest, http_client, stdio_client, tool_error
from tests.e2e.test_mcp_fuzz import StdioSession
from tests.support import unique

READ_ONLY = "mcp-messages-reader-1"


@pytest.fixture(scope="module")
def read_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A Server whose one token may read ``mcp:a`` and do nothing else."""
    base = tmp_path_factory.mktemp("mcp-messages")
    admin = "mcp-messages-admin-2"
    grants = {
        "principals": [
            {"name": "admin", "token_sha256": digest(admin), "read": ["*"], "write": ["*"]},
            {"name": "reader", "token_sha256": digest(READ_ONLY), "read": ["mcp:a"], "write": []},
        ]
    }
    (base / "access.json").write_text(json.dumps(grants), encoding="utf-8")
    with live_server(base, {"POWERCONTEXT_ACCESS_FILE": str(base / "access.json")}) as live:
        for sid in ("mcp:a", "mcp:b"):
            created = httpx.post(
                live.base_url + "/v1/scopes",
                json={"scope_id": sid, "title": sid},
                headers={"Authorization": f"Bearer {admin}"},
                timeout=30,
            )
            assert created.status_code == 201
        yield live


def closed_port_url() -> str:
    """A loopback URL nothing listens on: a call that reached the network would answer server-unreachable."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_a_refused_tool_call_names_the_missing_grant(read_only: LiveServer) -> None:
    add = {"scope_id": "mcp:a", "text": "x", "kind": "fact"}
    unreadable = {"scope_id": "mcp:b", "query": "anything"}

    async def over_both() -> list[dict[str, Any]]:
        url = read_only.base_url
        async with stdio_client(url, READ_ONLY) as stdio, http_client(url, READ_ONLY) as h:
            readable = {item["scope_id"] for item in (await call(stdio, "scope_list", {}))["items"]}
            assert readable == {"mcp:a"}  # the Scope it may not write is one it may read
            return [
                await tool_error(stdio, "memory_add", add),
                await tool_error(h, "memory_add", add),
                await tool_error(stdio, "memory_search", unreadable),
                await tool_error(h, "memory_search", unreadable),
            ]

    write_stdio, write_http, read_stdio, read_http = anyio.run(over_both)
    assert write_stdio == write_http and read_stdio == read_http  # one message, either transport
    assert (write_stdio["code"], write_stdio["status"]) == ("scope-forbidden", 403)
    assert "a 'write' grant" in write_stdio["message"]
    assert "scope_list" not in write_stdio["message"]  # listing readable Scopes would not help: it reads this one
    assert "a 'read' grant" in read_stdio["message"] and "scope_list" in read_stdio["message"]
    api = httpx.post(
        read_only.base_url + "/v1/scopes/mcp:a/atomic-memory",
        json={"text": "x", "kind": "fact"},
        headers={"Authorization": f"Bearer {READ_ONLY}"},
        timeout=30,
    )
    assert api.status_code == 403 and "a 'write' grant" in api.json()["error"]["message"]


def enum_arguments() -> list[tuple[str, str, list[str], dict[str, Any]]]:
    """Every (tool, argument, allowed values, otherwise valid arguments) of the catalog with an ``enum``."""
    found = []
    for tool in TOOLS:
        for name, schema in tool.properties.items():
            if "enum" in schema:
                base = {r: ("mc_1" if r == "candidate_id" else "x") for r in tool.required}
                base["scope_id"] = "project:a"
                found.append((tool.name, name, list(schema["enum"]), base))
    return found


def test_every_enum_argument_is_checked_before_any_request() -> None:
    cases = enum_arguments()
    assert {(tool, arg) for tool, arg, _, _ in cases} >= {
        ("memory_add", "kind"),
        ("memory_search", "mode"),
        ("memory_candidates_list", "status"),
        ("memory_candidate_decide", "decision"),
    }

    async def go() -> list[dict[str, Any]]:
        async with stdio_client(closed_port_url()) as client:
            return [await tool_error(client, tool, {**base, arg: "maybe"}) for tool, arg, _, base in cases]

    for (tool, arg, allowed, _), error in zip(cases, anyio.run(go), strict=True):
        assert (error["code"], error["status"]) == ("invalid-request", 422), (tool, error)
        assert f"argument {arg!r} must be one of: {', '.join(allowed)}" == error["message"], (tool, error)


def test_decide_with_a_value_outside_its_enum_is_refused_over_http(server: LiveServer) -> None:
    arguments = {"scope_id": unique("mcp:none"), "candidate_id": "mc_1", "decision": "maybe"}

    async def go() -> dict[str, Any]:
        async with http_client(server.base_url, None) as client:
            return await tool_error(client, "memory_candidate_decide", arguments)

    error = anyio.run(go)
    assert error == {
        "code": "invalid-request",
        "message": "argument 'decision' must be one of: approve, reject",
        "status": 422,
    }


def test_an_integer_argument_takes_a_number_with_no_fraction(server: LiveServer) -> None:
    scope_id = unique("mcp:limits")
    assert httpx.post(server.base_url + "/v1/scopes", json={"scope_id": scope_id, "title": "t"}).status_code == 201
    for text in ("Cron runs hourly", "Cron runs daily on Sundays"):
        memory = {"text": text, "kind": "fact"}
        assert httpx.post(f"{server.base_url}/v1/scopes/{scope_id}/atomic-memory", json=memory).status_code == 201

    async def go(client_for: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with client_for() as client:
            found = await call(client, "memory_search", {"scope_id": scope_id, "query": "cron", "limit": 1.0})
            profile = await tool_error(client, "profile_get", {"scope_id": scope_id, "revision": 1.0})
            refused = await tool_error(client, "memory_search", {"scope_id": scope_id, "query": "cron", "limit": 5.5})
            return found, profile, refused

    for client_for in (lambda: stdio_client(server.base_url), lambda: http_client(server.base_url, None)):
        found, profile, refused = anyio.run(go, client_for)
        assert len(found["hits"]) == 1
        assert profile["code"] == "artifact-not-found"  # revision 1.0 reached the API as revision 1
        assert refused == {"code": "invalid-request", "message": "argument 'limit' must be an integer", "status": 422}


@pytest.mark.parametrize("url", ["localhost:18767", "http://127.0.0.1:8765/v1"])
def test_mcp_refuses_to_start_on_a_url_that_is_not_one(url: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}
    for args, extra in ((["mcp"], {"POWERCONTEXT_URL": url}), (["mcp", "--url", url], {})):
        done = subprocess.run(
            [sys.executable, "-m", "powercontext", *args],
            input=json.dumps(initialize).encode() + b"\n",
            capture_output=True,
            env={**env, **extra},
            cwd=str(REPO_ROOT),
            timeout=60,
        )
        stderr = done.stderr.decode()
        assert done.returncode == 2, stderr
        assert done.stdout == b""
        assert stderr.count("\n") == 1 and stderr.startswith("error: invalid-url: the Server URL"), stderr
        assert "server-unreachable" not in stderr


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def test_a_batch_or_a_forbidden_id_is_answered_as_stdio_answers_it(server: LiveServer) -> None:
    frames = {
        "batch": json.dumps([PING, {**PING, "id": 2}]).encode(),
        "empty_batch": b"[]",
        "object_id": b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
        "no_method": b'{"jsonrpc":"2.0","id":3}',
        "params_not_object": b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":"sekrit"}',
    }
    session = StdioSession(server.base_url)
    try:
        for name, frame in frames.items():
            answered = httpx.post(server.base_url + "/mcp", content=frame, headers=MCP_HEADERS, timeout=30)
            assert answered.status_code == 400, (name, answered.status_code, answered.text)
            error = answered.json()
            assert error["jsonrpc"] == "2.0" and error["id"] is None, name
            for noise in ("input_value", "pydantic", "sekrit", "Validation error"):
                assert noise not in answered.text, (name, answered.text)
            if name == "no_method":
                continue  # stdio ignores it: an answer to a request it never sent
            session.send(frame)
            session.send(json.dumps({**PING, "id": f"after-{name}"}).encode())
            over_stdio = session.until(f"after-{name}")[0]
            if name == "params_not_object":
                assert over_stdio["error"]["code"] == -32602 and error["error"]["code"] == -32602, name
                continue
            assert over_stdio == error, name  # the same code, message and id: null
        batch = httpx.post(server.base_url + "/mcp", content=frames["batch"], headers=MCP_HEADERS, timeout=30)
        assert batch.json()["error"]["code"] == -32600
        assert "batches are not supported" in batch.json()["error"]["message"]
        ok = httpx.post(server.base_url + "/mcp", json=PING, headers=MCP_HEADERS, timeout=30)
        assert ok.status_code == 200 and ok.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    finally:
        session.close()
