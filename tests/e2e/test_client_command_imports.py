"""What a client command imports (issue 41: ``memory add``, ``memory search``, ``context prepare`` <= 250 ms).

A client command only talks HTTP to a Server, so it must not import the Server, the stores, the embedding
models, the other command groups, or the command-line tools of its dependencies. The three commonest, in their
common shape, take the short route (``cli.quick``) and load neither Typer, pydantic nor httpx. Each test runs
the real console script against the session's Server with ``PYTHONPROFILEIMPORTTIME=1``, checks the command did
its job, and lists what it imported; no timing is asserted (bench/client_command_startup.py measures it).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import LiveServer
from tests.e2e.test_host_process_imports import imported_modules, run_script
from tests.support import Api

# Loaded by a client command for nothing: the Server's side, another group's modules, other families' wire
# models, the command lines of httpx (Click, Rich, Pygments), and the async network stack (a command sends one
# request at a time over a blocking transport).
NEVER = (
    "powercontext.server",
    "powercontext.store",
    "powercontext.inference",
    "powercontext.search",
    "powercontext.recall",
    "powercontext.assembly",
    "powercontext.writes",
    "powercontext.jobs",
    "powercontext.hosts",
    "powercontext.evaluation",
    "powercontext.cli.hosts",
    "powercontext.cli.evaluate",
    "powercontext.cli.families",
    "powercontext.cli.prompts",
    "powercontext.cli.code",
    "powercontext.cli.store",
    "powercontext.contract.families",
    "powercontext.contract.prompts",
    "powercontext.contract.explain",
    "fastapi",
    "starlette",
    "uvicorn",
    "numpy",
    "tokenizers",
    "sqlite3",
    "pysqlite3",
    "click",
    "rich",
    "pygments",
    "anyio._backends",
    "anyio._core._sockets",
)


# What the short route does without: the CLI framework, the wire models and the HTTP client.
SHORT_ROUTE_NEVER = ("typer", "pydantic", "httpx", "httpcore", "powercontext.client", "powercontext.contract")


def unneeded(modules: set[str], never: tuple[str, ...] = NEVER) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in never))


def run_with_profile(server: LiveServer, api: Api, tmp_path: Path, args: list[str]) -> tuple[str, set[str]]:
    """Run ``args`` (with ``-s`` a new Scope holding one memory) as the console script; (stdout, imported)."""
    scope_id = api.new_scope(prefix="cli-imports")
    api.add(scope_id, "The settlement batch runs nightly at 02:00 UTC", kind="fact")
    command = [*args[:2], "-s", scope_id, *args[2:]]
    done = run_script(command, "", tmp_path, {"POWERCONTEXT_URL": server.base_url})
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, imported_modules(done.stderr)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["memory", "add", "Invoices are issued on the first working day", "--tag", "billing"], "revision 1"),
        (["memory", "search", "settlement batch", "--limit", "3"], "02:00 UTC"),
        (["context", "prepare", "-q", "when does the settlement batch run?", "--json"], "02:00 UTC"),
    ],
    ids=["memory-add", "memory-search", "context-prepare"],
)
def test_the_commonest_commands_take_the_short_route(
    server: LiveServer, api: Api, tmp_path: Path, args: list[str], expected: str
) -> None:
    stdout, modules = run_with_profile(server, api, tmp_path, args)
    assert expected in stdout
    assert "powercontext.cli.quick" in modules  # the profile covers the command's own imports
    assert unneeded(modules, NEVER + SHORT_ROUTE_NEVER) == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["memory", "add", "Invoices are issued monthly", "--observed-at", "2025-01-02"], "observed 2025-01-02"),
        (["memory", "list"], "02:00 UTC"),
    ],
    ids=["memory-add-observed", "memory-list"],
)
def test_a_client_command_imports_only_the_client(
    server: LiveServer, api: Api, tmp_path: Path, args: list[str], expected: str
) -> None:
    stdout, modules = run_with_profile(server, api, tmp_path, args)
    assert expected in stdout
    assert "powercontext.client" in modules
    assert unneeded(modules) == []
