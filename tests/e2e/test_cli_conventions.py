"""What a person meets at the shell: --version, completion, plain help, exit codes by class, errors that
name commands, paged ``memory list`` and ``--json`` on import; the real CLI process against a real Server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from powercontext import __version__
from tests.conftest import LiveServer
from tests.e2e.test_cli import run_cli
from tests.support import free_port


@pytest.fixture
def scope(server: LiveServer) -> str:
    scope_id = f"conv-{uuid.uuid4().hex[:12]}"
    assert run_cli("scope", "create", scope_id, url=server.base_url).returncode == 0
    return scope_id


def test_version() -> None:
    result = run_cli("--version")
    assert (result.returncode, result.stdout.strip()) == (0, f"powercontext {__version__}")


@pytest.mark.parametrize(
    "command",
    [(), ("memory", "add"), ("memory", "list"), ("context", "prepare"), ("code", "index"), ("eval", "run")],
)
def test_help_names_values_not_python_types(command: tuple[str, ...]) -> None:
    result = run_cli(*command, "--help")
    assert result.returncode == 0, result.stderr
    for python_type in ("<bool>", "<str>", "<int>", "<list[str]>", "<path>", "<int range>"):
        assert python_type not in result.stdout, (python_type, result.stdout)
    if command == ("memory", "add"):
        assert "--scope SCOPE" in result.stdout and "TEXT" in result.stdout


def test_shell_completion_installs_for_bash(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env["HOME"] = str(tmp_path)
    # Run from bash, as a person does: the shell is detected from the parent process.
    command = f"{sys.executable} -m powercontext"

    def from_bash(option: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "-c", f"{command} {option}; exit $?"], capture_output=True, text=True, env=env)

    shown = from_bash("--show-completion")
    assert shown.returncode == 0, shown.stderr
    assert "_POWERCONTEXT_COMPLETE" in shown.stdout and "complete " in shown.stdout
    installed = from_bash("--install-completion")
    assert installed.returncode == 0, installed.stderr
    assert "bash completion installed" in installed.stdout
    assert "_POWERCONTEXT_COMPLETE" in (tmp_path / ".bash_completions" / "powercontext.sh").read_text()
    assert "powercontext.sh" in (tmp_path / ".bashrc").read_text()


def test_exit_codes_by_class_and_errors_that_name_commands(server: LiveServer, scope: str) -> None:
    url = server.base_url
    missing_scope = f"conv-missing-{uuid.uuid4().hex[:8]}"
    not_found = run_cli("memory", "add", "text", "-s", missing_scope, url=url)
    assert not_found.returncode == 3
    assert f"create it with `powercontext scope create {missing_scope}`" in not_found.stderr
    assert "/v1/" not in not_found.stderr
    no_profile = run_cli("profile", "get", "-s", scope, url=url)
    assert no_profile.returncode == 3
    assert f"`powercontext profile set KEY=VALUE -s {scope}`" in no_profile.stderr
    conflict = run_cli("scope", "create", scope, url=url)
    assert conflict.returncode == 4 and conflict.stderr.startswith("error: scope-exists:")
    down = run_cli("scope", "list", url=f"http://127.0.0.1:{free_port()}")
    assert down.returncode == 5 and "`powercontext server run`" in down.stderr
    usage = run_cli("memory", "list", "-s", scope, "--limit", "0", url=url)
    assert usage.returncode == 2
    invalid = run_cli("memory", "list", "-s", scope, "--cursor", "not-a-cursor", url=url)
    assert invalid.returncode == 2 and invalid.stderr.startswith("error: invalid-request:")
    refused = run_cli("code", "index", "/", "-s", scope, url=url)
    assert refused.returncode == 1 and "code-root-forbidden" in refused.stderr
    assert "POWERCONTEXT_CODE_ROOTS" in refused.stderr and f"code index PATH -s {scope} --db" in refused.stderr
    for result in (not_found, no_profile, conflict, down, invalid, refused):
        assert "Traceback" not in result.stderr


def test_memory_list_pages_newest_first_without_repeats(server: LiveServer, scope: str) -> None:
    url = server.base_url
    texts = [f"Paging fact number {n}" for n in range(5)]
    ids = []
    for text in texts:
        added = run_cli("memory", "add", text, "-s", scope, "--json", url=url)
        ids.append(json.loads(added.stdout)["artifact_address"]["artifact"]["artifact_id"])
    forgotten = run_cli("memory", "forget", ids[0], "-s", scope, url=url)
    assert forgotten.returncode == 0, forgotten.stderr

    first = run_cli("memory", "list", "-s", scope, "--limit", "2", url=url)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert [line.split("@")[0] for line in lines] == [ids[4], ids[3]]
    assert lines[0].endswith("Paging fact number 4") and "[fact]" in lines[0]
    assert "more: --cursor " in first.stderr

    seen: list[str] = []
    cursor: str | None = None
    while True:
        args = ["memory", "list", "-s", scope, "--limit", "2", "--json"]
        page = json.loads(run_cli(*args, *(["--cursor", cursor] if cursor else []), url=url).stdout)
        seen += [m["artifact_address"]["artifact"]["artifact_id"] for m in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == [ids[4], ids[3], ids[2], ids[1]]  # the forgotten one is not active
    every = json.loads(run_cli("memory", "list", "-s", scope, "--state", "all", "--json", url=url).stdout)
    assert [m["state"] for m in every["items"]] == ["active"] * 4 + ["forgotten"]
    assert every["next_cursor"] is None


def test_memory_import_prints_json(server: LiveServer, scope: str, tmp_path: Path) -> None:
    source = tmp_path / "two.jsonl"
    source.write_text('{"text": "Alpha fact", "kind": "fact"}\n{"text": "Beta decision", "kind": "decision"}\n')
    first = run_cli("memory", "import", str(source), "-s", scope, "--json", url=server.base_url)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {"scope_id": scope, "imported": 2, "existed": 0}
    again = run_cli("memory", "import", str(source), "-s", scope, "--json", url=server.base_url)
    assert json.loads(again.stdout) == {"scope_id": scope, "imported": 0, "existed": 2}
    created = run_cli("scope", "create", scope + "-x", "--json", url=server.base_url)
    assert json.loads(created.stdout)["scope_id"] == scope + "-x"


def test_store_copy_prints_json(tmp_path: Path) -> None:
    from powercontext.store.sqlite import SqliteStore

    SqliteStore(tmp_path / "a.db").close()  # an empty store: a source must exist
    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    result = run_cli("store", "copy", "--from", source, "--to", target, "--json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["matches"] is True
    assert {"table": "scopes", "source": 0, "destination": 0} in answer["tables"]
