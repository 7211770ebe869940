"""``powercontext hosts install|uninstall|doctor``, run as a user runs them, in a throwaway HOME.

Install writes portable shared files and per-machine trust; the hook command it registers runs through the
shell as the hosts run it; doctor names each broken state with the command that fixes it; dry-run writes
nothing; uninstall removes exactly what install added.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from powercontext.hosts.codex import trust_hash
from tests import forked
from tests.conftest import LiveServer
from tests.support import Api, free_port

VENV_BIN = str(Path(sys.executable).parent)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "pkg").mkdir()
    return root.resolve()


def user_env(home: Path, path: str = VENV_BIN, **extra: str) -> dict[str, str]:
    """A user's environment: their HOME, `powercontext` on PATH, nothing else of ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERCONTEXT_", "XDG_", "CODEX_", "CLAUDE_"))}
    env.update(HOME=str(home), PATH=os.pathsep.join([path, "/usr/bin", "/bin"]), **extra)
    return env


def pc(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return forked.run([*forked.POWERCONTEXT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def run_shell_hook(command: str, payload: dict[str, Any], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A hook command string, run through the shell the way Claude Code and Codex run command hooks."""
    return subprocess.run(
        command, shell=True, input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=30
    )


def the_hook_command(settings_file: Path) -> str:
    entries = json.loads(settings_file.read_text())["hooks"]["UserPromptSubmit"]
    commands = [h["command"] for e in entries for h in e["hooks"] if "powercontext" in h["command"]]
    assert len(commands) == 1, commands
    return str(commands[0])


def snapshot(*roots: Path) -> dict[str, str]:
    return {
        str(p): p.read_text(encoding="utf-8")
        for root in roots
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts and ".local" not in p.parts
    }


def doctor_lines(out: str) -> dict[str, str]:
    return {line.split()[1]: line for line in out.splitlines() if line[:1] in "✔✘!"}


@pytest.mark.parametrize("host", ["claude-code", "codex"])
def test_install_registers_a_portable_hook_that_injects(
    host: str, project: Path, home: Path, server: LiveServer, api: Api
) -> None:
    scope_id = api.new_scope(prefix="install")
    api.add(scope_id, "Deploys happen from the release branch only", kind="constraint")
    env = user_env(home)
    done = pc(
        "hosts", "install", host, "--scope", scope_id, "--url", server.base_url, "--yes", cwd=project / "pkg", env=env
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ready:" in done.stdout
    assert f"See them: powercontext source list -s {scope_id}" in done.stdout  # where captured text can be read
    assert (project / ".powercontext.toml").read_text() == f'scope_id = "{scope_id}"\n'
    shared = (
        [".claude/settings.json", ".mcp.json"] if host == "claude-code" else [".codex/hooks.json", ".codex/config.toml"]
    )
    for name in shared:  # committed files: no interpreter, venv, home, URL or port
        text = (project / name).read_text()
        for machine_specific in (VENV_BIN, str(home), server.base_url, "127.0.0.1", sys.executable):
            assert machine_specific not in text, f"{name} holds {machine_specific}"
    settings = project / (".claude/settings.json" if host == "claude-code" else ".codex/hooks.json")
    command = the_hook_command(settings)
    assert command == f"powercontext hook {host}"
    payload = {"hook_event_name": "UserPromptSubmit", "cwd": str(project / "pkg"), "prompt": "how do deploys work?"}
    ran = run_shell_hook(command, payload, env)  # no POWERCONTEXT_URL: the URL recorded for this project is used
    assert ran.returncode == 0, ran.stderr
    assert "release branch" in json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]

    doctor = pc("hosts", "doctor", "--host", host, cwd=project / "pkg", env=env)
    lines = doctor_lines(doctor.stdout)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert lines["server"].startswith("✔") and server.base_url in lines["server"]
    assert scope_id in lines["scope"] and "(from config)" in lines["scope"]
    assert "injected" in lines["last-hook-run"]
    assert lines[f"{host}-hook"].startswith("✔") and str(settings) in lines[f"{host}-hook"]


def test_codex_install_records_exactly_the_trust_codex_expects(project: Path, home: Path) -> None:
    done = pc("hosts", "install", "codex", "--yes", cwd=project, env=user_env(home))
    assert done.returncode == 0, done.stderr
    user = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert user["projects"] == {str(project): {"trust_level": "trusted"}}
    key = f"{project}/.codex/hooks.json:user_prompt_submit:0:0"
    hooks = json.loads((project / ".codex" / "hooks.json").read_text())["hooks"]
    handler = hooks["UserPromptSubmit"][0]["hooks"][0]
    stop = hooks["Stop"][0]["hooks"][0]  # capture of the final answer (docs/hosts.md), trusted the same way
    assert stop["command"] == "powercontext hook codex stop"
    stop_key = f"{project}/.codex/hooks.json:stop:0:0"
    assert user["hooks"]["state"] == {
        key: {"trusted_hash": trust_hash(handler)},
        stop_key: {"trusted_hash": trust_hash(stop, event="stop")},
    }
    mcp = tomllib.loads((project / ".codex" / "config.toml").read_text())["mcp_servers"]["powercontext"]
    assert mcp == {"command": "powercontext", "args": ["mcp"], "env_vars": ["POWERCONTEXT_URL", "POWERCONTEXT_TOKEN"]}


def test_install_without_consent_records_no_trust_and_says_so(project: Path, home: Path) -> None:
    done = pc("hosts", "install", "codex", cwd=project, env=user_env(home))
    assert done.returncode == 1
    assert "powercontext hosts install codex --yes" in done.stderr
    assert not (home / ".codex").exists()
    assert (project / ".codex" / "hooks.json").is_file()


def test_dry_run_prints_every_change_and_writes_nothing(project: Path, home: Path) -> None:
    done = pc(
        "hosts",
        "install",
        "codex",
        "--scope",
        "s:dry",
        "--url",
        "http://127.0.0.1:9",
        "--dry-run",
        cwd=project,
        env=user_env(home, POWERCONTEXT_TOKEN="tok-secret"),
    )
    assert done.returncode == 0, done.stderr
    assert snapshot(project, home) == {}
    for path in (
        project / ".codex/hooks.json",
        project / ".codex/config.toml",
        home / ".codex/config.toml",
        project / ".powercontext.toml",
    ):
        assert f"would create {path}" in done.stdout
    assert "+trusted_hash = " in done.stdout and '+scope_id = "s:dry"' in done.stdout
    assert "tok-secret" not in done.stdout  # the token is recorded, never printed


@pytest.mark.parametrize("host", ["claude-code", "codex"])
def test_uninstall_removes_exactly_what_install_added(host: str, project: Path, home: Path) -> None:
    other = {"hooks": [{"type": "command", "command": "echo other-hook"}]}
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(
        json.dumps({"model": "x", "hooks": {"UserPromptSubmit": [other]}})
    )
    (project / ".codex").mkdir()
    (project / ".codex" / "config.toml").write_text('model = "gpt"\n')
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text('model = "o4"\n[projects."/elsewhere"]\ntrust_level = "trusted"\n')
    (home / ".claude.json").write_text(json.dumps({"numStartups": 3, "projects": {"/elsewhere": {"x": 1}}}))
    before = snapshot(project, home)
    env = user_env(home)
    for _ in range(2):  # idempotent
        done = pc(
            "hosts", "install", host, "--scope", "s:u", "--url", "http://127.0.0.1:9", "--yes", cwd=project, env=env
        )
        assert done.returncode == 0, done.stderr
    installed = snapshot(project, home)
    assert installed != before
    if host == "claude-code":
        settings = json.loads((project / ".claude" / "settings.json").read_text())
        assert settings["model"] == "x" and settings["hooks"]["UserPromptSubmit"][0] == other
        assert len(settings["hooks"]["UserPromptSubmit"]) == 2
    done = pc("hosts", "uninstall", host, cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    after = snapshot(project, home)
    assert {k: json.loads(v) if k.endswith(".json") else v for k, v in after.items()} == {
        k: json.loads(v) if k.endswith(".json") else v for k, v in before.items()
    }


def test_install_refuses_a_broken_settings_file(project: Path, home: Path) -> None:
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text("{ not json", encoding="utf-8")
    done = pc("hosts", "install", "claude-code", "--yes", cwd=project, env=user_env(home))
    assert done.returncode == 2 and "not valid JSON" in done.stderr
    assert (project / ".claude" / "settings.json").read_text() == "{ not json"


def _fail_with_fix(out: str, name: str, fix: str) -> None:
    lines = out.splitlines()
    index = next(i for i, line in enumerate(lines) if line.startswith("✘") and line.split()[1] == name)
    assert lines[index + 1].strip() == f"fix: {fix}", out


def test_doctor_names_untrusted_and_stale_codex_hooks(project: Path, home: Path, server: LiveServer) -> None:
    env = user_env(home, POWERCONTEXT_URL=server.base_url)
    (project / ".powercontext.toml").write_text('scope_id = "never:created"\n')
    assert pc("hosts", "install", "codex", cwd=project, env=env).returncode == 1  # no consent: untrusted
    untrusted = pc("hosts", "doctor", "--host", "codex", cwd=project, env=env)
    assert untrusted.returncode == 1
    _fail_with_fix(untrusted.stdout, "codex-project-trust", "powercontext hosts install codex --yes")
    _fail_with_fix(untrusted.stdout, "codex-hook-trust", "powercontext hosts install codex --yes")
    _fail_with_fix(untrusted.stdout, "scope-exists", "powercontext scope create never:created --title '...'")

    assert pc("hosts", "install", "codex", "--yes", cwd=project, env=env).returncode == 0
    trusted = doctor_lines(pc("hosts", "doctor", "--host", "codex", cwd=project, env=env).stdout)
    assert trusted["codex-hook-trust"].startswith("✔") and trusted["codex-project-trust"].startswith("✔")
    hooks_file = project / ".codex" / "hooks.json"
    hooks = json.loads(hooks_file.read_text())
    hooks["hooks"]["UserPromptSubmit"][0]["hooks"][0]["timeout"] = 30  # edited after trust: Codex would skip it
    hooks_file.write_text(json.dumps(hooks))
    stale = pc("hosts", "doctor", "--host", "codex", cwd=project, env=env)
    assert stale.returncode == 1 and "stale trust" in stale.stdout
    _fail_with_fix(stale.stdout, "codex-hook-trust", "powercontext hosts install codex --yes")


def test_doctor_names_a_down_server_and_needs_no_mcp_package(project: Path, home: Path, tmp_path: Path) -> None:
    # A `powercontext` on PATH whose environment lacks the `mcp` package (as with `pip install powercontext`).
    bare = tmp_path / "bare-bin"
    bare.mkdir()
    script = bare / "powercontext"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nsys.modules['mcp'] = None  # not installed\n"
        "from powercontext.cli.entry import main\nmain()\n"
    )
    script.chmod(0o755)
    env = user_env(home, path=str(bare))
    assert pc("hosts", "install", "claude-code", "--scope", "s:x", "--yes", cwd=project, env=env).returncode == 0
    down = pc("hosts", "doctor", "--url", f"http://127.0.0.1:{free_port()}", cwd=project, env=env)
    assert down.returncode == 1
    _fail_with_fix(down.stdout, "server", "powercontext server run")
    # `powercontext mcp` is a standard-library stdio server: it answers initialize without the `mcp` package.
    assert doctor_lines(down.stdout)["claude-code-mcp-server"].startswith("✔"), down.stdout
    assert doctor_lines(down.stdout)["claude-code-mcp-approval"].startswith("✔")


def test_install_and_doctor_say_when_powercontext_is_not_on_path(project: Path, home: Path) -> None:
    """The hook runs with the interpreter install recorded for this machine; the MCP server entry still needs
    `powercontext` on PATH, and doctor says so with a fix that installs this checkout."""
    off = user_env(home, path="/nonexistent")
    installed = pc("hosts", "install", "claude-code", "--yes", cwd=project, env=off)
    assert installed.returncode == 0 and "`powercontext` is not on PATH" in installed.stderr
    off_path = pc("hosts", "doctor", "--host", "claude-code", cwd=project, env=off)
    assert off_path.returncode == 1
    assert doctor_lines(off_path.stdout)["claude-code-hook-command"].startswith("✔")
    assert "`powercontext` is not on PATH" in doctor_lines(off_path.stdout)["claude-code-mcp-server"]
    as_json = pc("hosts", "doctor", "--host", "claude-code", "--json", cwd=project, env=off)
    assert as_json.returncode == 1
    checks = {c["name"]: c for c in json.loads(as_json.stdout)["checks"]}
    assert checks["claude-code-mcp-server"]["status"] == "fail"
    assert "pipx install -e " in checks["claude-code-mcp-server"]["fix"]
