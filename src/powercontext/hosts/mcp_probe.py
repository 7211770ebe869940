"""``hosts doctor``'s look at a host's MCP server entry: started exactly as the host would start it, does it
answer ``initialize``, and do its tools reach the Server?

The probe runs the configured command in the project with the environment the host passes it (the user's
plus the entry's own), sends ``initialize`` and then one read-only ``scope_list`` call, and reports what came
back. Which Server that process talks to is its own business (``POWERCONTEXT_URL``, else the URL ``hosts
install`` recorded in ``hosts.json``, else the default); ``server_target`` names the same choice for the
report so a failure says where it looked.
"""

from __future__ import annotations

import contextlib
import json
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from powercontext.hosts.machine import machine_config_path, project_settings
from powercontext.hosts.scope import find_repo_root
from powercontext.server_url import DEFAULT_URL

if TYPE_CHECKING:
    from powercontext.hosts.adapter import Check, HostContext

PROBE_TIMEOUT_S = 15.0
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "doctor", "version": "1"}},
}
_INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
_SCOPE_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "scope_list", "arguments": {}}}


class McpProbe(NamedTuple):
    """``answered``: ``initialize`` came back. ``reached``: ``scope_list`` got the Server's answer (None: not
    asked); ``error_code`` is the tool error's stable code when it did not."""

    answered: bool
    detail: str
    reached: bool | None = None
    error_code: str | None = None
    scopes: int | None = None


class ServerTarget(NamedTuple):
    url: str
    url_source: str
    token_source: str | None  # None: no token


def server_target(env: Mapping[str, str], cwd: Path) -> ServerTarget:
    """The Server URL (and where the token comes from) that ``powercontext mcp`` started in ``cwd`` uses."""
    recorded = project_settings(find_repo_root(cwd) or cwd, env)
    where = str(machine_config_path(env))
    if env.get("POWERCONTEXT_URL", "").strip():
        url, url_source = env["POWERCONTEXT_URL"].strip(), "POWERCONTEXT_URL"
    elif "url" in recorded:
        url, url_source = recorded["url"], where
    else:
        url, url_source = DEFAULT_URL, "the default"
    token_source = (
        "POWERCONTEXT_TOKEN" if env.get("POWERCONTEXT_TOKEN", "").strip() else (where if "token" in recorded else None)
    )
    return ServerTarget(url, url_source, token_source)


def _send(stdin: IO[str], message: dict[str, Any]) -> None:
    stdin.write(json.dumps(message) + "\n")
    stdin.flush()


def _answer(lines: queue.Queue[str | None], msg_id: int, deadline: float) -> dict[str, Any] | None:
    """The JSON-RPC answer to ``msg_id``, or None at EOF or the deadline."""
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            return None
        if line is None:
            return None
        with contextlib.suppress(ValueError):
            message = json.loads(line)
            if isinstance(message, dict) and message.get("id") == msg_id:
                return message
    return None


def _drain(stream: IO[str], sink: queue.Queue[str | None] | list[str]) -> None:
    with contextlib.suppress(OSError, ValueError):
        for line in stream:
            if isinstance(sink, list):
                sink[:] = [*sink[-4:], line]  # the last lines only: enough to say why it failed
            else:
                sink.put(line)
    if not isinstance(sink, list):
        sink.put(None)


def _tool_outcome(answer: dict[str, Any]) -> McpProbe:
    raw = answer.get("result")
    result: dict[str, Any] = raw if isinstance(raw, dict) else {}
    if result.get("isError"):
        try:
            error = json.loads(result["content"][0]["text"])["error"]
            code, message = str(error["code"]), str(error["message"])
        except (ValueError, KeyError, IndexError, TypeError):
            code, message = "unknown", "an unreadable tool error"
        return McpProbe(True, message, False, code)
    structured = result.get("structuredContent")
    scopes = structured.get("scopes") if isinstance(structured, dict) else None
    return McpProbe(True, "scope_list answered", True, scopes=len(scopes) if isinstance(scopes, list) else None)


def mcp_probe(command: str, args: list[str], env: Mapping[str, str], cwd: Path, *, call_tool: bool = True) -> McpProbe:
    """Start an MCP stdio server as a host would, ask ``initialize`` and (``call_tool``) ``scope_list``."""
    program = shutil.which(command, path=env.get("PATH")) or command
    try:
        process = subprocess.Popen(
            [program, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(env),
            cwd=str(cwd),
        )
    except OSError as exc:
        return McpProbe(False, f"did not start ({type(exc).__name__})")
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    lines: queue.Queue[str | None] = queue.Queue()
    errors: list[str] = []
    threading.Thread(target=_drain, args=(process.stdout, lines), daemon=True).start()
    threading.Thread(target=_drain, args=(process.stderr, errors), daemon=True).start()
    deadline = time.monotonic() + PROBE_TIMEOUT_S
    try:
        with contextlib.suppress(OSError):
            _send(process.stdin, _INITIALIZE)
        if _answer(lines, 1, deadline) is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=max(0.0, min(1.0, deadline - time.monotonic())))
            why = errors[-1].strip()[:200] if errors else f"exit {process.returncode}"
            return McpProbe(False, f"no initialize answer: {why}")
        if not call_tool:
            return McpProbe(True, "answered initialize")
        with contextlib.suppress(OSError):
            _send(process.stdin, _INITIALIZED)
            _send(process.stdin, _SCOPE_LIST)
        answer = _answer(lines, 2, deadline)
        if answer is None:
            return McpProbe(True, "answered initialize", False, "timeout")
        return _tool_outcome(answer)
    finally:
        with contextlib.suppress(OSError):
            process.stdin.close()
        try:
            process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def mcp_checks(
    host: str, prefix: str, server: Mapping[str, Any], env: Mapping[str, str], ctx: HostContext
) -> list[Check]:
    """``PREFIX-mcp-server`` (the command starts and answers ``initialize``) and ``PREFIX-mcp-reach`` (its tools
    reach the Server with the URL and token it resolves), each failure with the command that fixes it."""
    from powercontext.hosts.adapter import Check, mcp_server_fix
    from powercontext.hosts.machine import install_this_checkout

    command, args = str(server.get("command", "")), [str(a) for a in server.get("args", [])]
    probe = mcp_probe(command, args, env, ctx.project)
    if not probe.answered:
        # Not on the PATH the host starts it with: put this checkout there (never the PyPI name).
        missing = shutil.which(command, path=env.get("PATH")) is None
        fix = install_this_checkout() if missing else mcp_server_fix()
        detail = f"`{command}` is not on PATH" if missing else f"`{command}`: {probe.detail}"
        return [Check(f"{prefix}-mcp-server", "fail", detail, fix)]
    checks = [Check(f"{prefix}-mcp-server", "ok", f"`{command}`: answered initialize")]
    target = server_target(env, ctx.project)
    where = f"{target.url} (URL from {target.url_source})"
    if probe.reached:
        token = f"token from {target.token_source}" if target.token_source else "no token"
        readable = "" if probe.scopes is None else f"; {probe.scopes} Scope(s) readable"
        checks.append(Check(f"{prefix}-mcp-reach", "ok", f"its tools reach {where}, {token}{readable}"))
    elif probe.error_code in ("server-unreachable", "timeout"):
        known = ctx.server_url
        if known and known.rstrip("/") != target.url.rstrip("/"):
            fix = f"powercontext hosts install {host} --url {known} --yes"
        else:
            fix = f"powercontext server run   (or: powercontext hosts install {host} --url <the Server's URL> --yes)"
        checks.append(Check(f"{prefix}-mcp-reach", "fail", f"its tools get no answer from {where}", fix))
    elif probe.error_code == "unauthenticated":
        detail = f"{target.url} refused its token ({'from ' + target.token_source if target.token_source else 'none'})"
        fix = f"POWERCONTEXT_TOKEN=<a token from the Server's access file> powercontext hosts install {host} --yes"
        checks.append(Check(f"{prefix}-mcp-reach", "fail", detail, fix))
    else:
        detail = f"scope_list via {where} failed: {probe.error_code}"
        checks.append(Check(f"{prefix}-mcp-reach", "fail", detail, f"powercontext hosts install {host} --yes"))
    return checks
