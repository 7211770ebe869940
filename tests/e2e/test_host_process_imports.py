"""What the per-prompt hook and ``powercontext mcp`` import: the standard library's small part, nothing heavy.

Both processes start on every prompt / session in the user's agent host, so their import list is their start-up
cost. Each test runs the real console script (as the host runs it) with ``PYTHONPROFILEIMPORTTIME=1``, checks
that it did its job, and lists every module it imported; no timing is asserted, so a loaded machine cannot
make these flaky.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import LiveServer
from tests.support import Api, free_port

SCRIPT = Path(sys.executable).parent / "powercontext"

# Each of these costs a hook or MCP start-up milliseconds to tens of milliseconds of CPU before it does anything.
HEAVY = {
    "pydantic",
    "httpx",
    "typer",
    "click",
    "rich",
    "fastapi",
    "starlette",
    "uvicorn",
    "anyio",
    "asyncio",
    "mcp",
    "powercontext.server",
    "powercontext.client",
    "powercontext.cli.main",
    "http.client",
    "email",
    "ssl",
    "dataclasses",  # imports inspect, ast, dis, tokenize
    "inspect",
    "tomllib",  # the simple .powercontext.toml that install writes is read without it
    "encodings.idna",  # a loopback URL never needs the IDNA codec
    "shutil",  # brings bz2, lzma, zlib and fnmatch
    "importlib.util",  # only adapters are imported by name, and the hook uses none
}


def imported_modules(stderr: str) -> set[str]:
    names = set()
    for line in stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name)
    return names


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m in HEAVY or any(m.startswith(h + ".") for h in HEAVY))


def run_script(args: list[str], stdin: str, cwd: Path, extra_env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env.update(PYTHONPROFILEIMPORTTIME="1", **extra_env)
    return subprocess.run(
        [str(SCRIPT), *args], input=stdin, capture_output=True, text=True, env=env, cwd=str(cwd), timeout=60
    )


def project(base: Path, scope_id: str) -> Path:
    repo = base / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".powercontext.toml").write_text(f'scope_id = "{scope_id}"\n', encoding="utf-8")
    return repo


def hook_payload(repo: Path, session: str) -> str:
    return json.dumps({"session_id": session, "cwd": str(repo), "prompt": "When does the settlement batch run?"})


def test_the_hook_injects_context_importing_nothing_heavy(server: LiveServer, api: Api, tmp_path: Path) -> None:
    scope_id = api.new_scope(prefix="imports")
    api.add(scope_id, "The settlement batch runs nightly at 02:00 UTC", kind="fact")
    repo = project(tmp_path, scope_id)
    env = {"POWERCONTEXT_URL": server.base_url, "POWERCONTEXT_HOOK_STATE_DIR": str(tmp_path / "state")}
    done = run_script(["hook", "claude-code"], hook_payload(repo, "s1"), repo, env)
    assert done.returncode == 0
    assert "02:00 UTC" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    modules = imported_modules(done.stderr)
    assert "powercontext.hosts.transport" in modules  # the profile really covers the hook's own imports
    assert heavy_in(modules) == []


def test_the_hook_tells_the_user_recall_is_down_importing_nothing_heavy(tmp_path: Path) -> None:
    repo = project(tmp_path, "any:scope")
    env = {"POWERCONTEXT_URL": f"http://127.0.0.1:{free_port()}", "POWERCONTEXT_HOOK_STATE_DIR": str(tmp_path)}
    done = run_script(["hook", "codex"], hook_payload(repo, "s2"), repo, env)
    assert done.returncode == 0
    assert "recall is unavailable" in json.loads(done.stdout)["systemMessage"]
    assert heavy_in(imported_modules(done.stderr)) == []


def test_mcp_answers_initialize_importing_nothing_heavy(server: LiveServer, tmp_path: Path) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    done = run_script(["mcp"], json.dumps(initialize) + "\n", tmp_path, {"POWERCONTEXT_URL": server.base_url})
    assert done.returncode == 0, done.stderr[-2000:]
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"]
    modules = imported_modules(done.stderr)
    assert "powercontext.mcp.stdio" in modules
    assert heavy_in(modules) == []
