"""``powercontext hosts install|doctor`` and the shipped plugins' hook commands, run as the hosts run them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT, LiveServer
from tests.support import Api, free_port

PC = [sys.executable, "-m", "powercontext"]
INTEGRATIONS = REPO_ROOT / "integrations"


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env.update(extra)
    return env


def pc(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PC, *args], cwd=str(cwd), env=env, capture_output=True, text=True, timeout=60)


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


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "pkg").mkdir()
    return root


@pytest.mark.parametrize("host", ["claude-code", "codex"])
def test_install_registers_a_hook_that_injects(
    host: str, project: Path, server: LiveServer, api: Api, tmp_path: Path
) -> None:
    scope_id = api.new_scope(prefix="install")
    api.add(scope_id, "Deploys happen from the release branch only", kind="constraint")
    env = clean_env(POWERCONTEXT_URL=server.base_url, POWERCONTEXT_HOOK_STATE_DIR=str(tmp_path / "state"))
    done = pc("hosts", "install", host, "--scope", scope_id, cwd=project / "pkg", env=env)
    assert done.returncode == 0, done.stderr
    assert (project / ".powercontext.toml").read_text() == f'scope_id = "{scope_id}"\n'
    settings = project / (".claude/settings.json" if host == "claude-code" else ".codex/hooks.json")
    command = the_hook_command(settings)
    payload = {"hook_event_name": "UserPromptSubmit", "cwd": str(project / "pkg"), "prompt": "how do deploys work?"}
    ran = run_shell_hook(command, payload, env)
    assert ran.returncode == 0, ran.stderr
    context = json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "release branch" in context

    doctor = pc("hosts", "doctor", "--url", server.base_url, cwd=project / "pkg", env=env)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    lines = {line.split()[1]: line for line in doctor.stdout.splitlines() if line.strip()}
    assert lines["server"].startswith("ok")
    assert scope_id in lines["scope"] and "(from config)" in lines["scope"]
    assert "injected" in doctor.stdout
    assert f"registered in {settings}" in doctor.stdout


def test_install_keeps_other_hooks_and_is_idempotent(project: Path) -> None:
    other = {"hooks": [{"type": "command", "command": "echo other-hook"}]}
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(
        json.dumps({"model": "x", "hooks": {"UserPromptSubmit": [other]}}), encoding="utf-8"
    )
    (project / ".codex").mkdir()
    (project / ".codex" / "config.toml").write_text('model = "gpt"\n', encoding="utf-8")
    for _ in range(2):
        for host in ("claude-code", "codex"):
            assert pc("hosts", "install", host, cwd=project, env=clean_env()).returncode == 0
    settings = json.loads((project / ".claude" / "settings.json").read_text())
    assert settings["model"] == "x"
    assert settings["hooks"]["UserPromptSubmit"][0] == other
    assert len(settings["hooks"]["UserPromptSubmit"]) == 2
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["powercontext"]["args"] == [
        "-m",
        "powercontext",
        "mcp",
    ]
    toml = (project / ".codex" / "config.toml").read_text()
    assert toml.startswith('model = "gpt"\n')
    assert toml.count("[mcp_servers.powercontext]") == 1
    import tomllib

    assert tomllib.loads(toml)["mcp_servers"]["powercontext"]["args"] == ["-m", "powercontext", "mcp"]
    assert not (project / ".powercontext.toml").exists()  # no --scope: nothing bound


def test_install_refuses_a_broken_settings_file(project: Path) -> None:
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text("{ not json", encoding="utf-8")
    done = pc("hosts", "install", "claude-code", cwd=project, env=clean_env())
    assert done.returncode == 2 and "not valid JSON" in done.stderr
    assert (project / ".claude" / "settings.json").read_text() == "{ not json"


def test_doctor_reports_a_missing_scope_and_a_down_server(project: Path, server: LiveServer, tmp_path: Path) -> None:
    (project / ".powercontext.toml").write_text('scope_id = "never:created"\n', encoding="utf-8")
    env = clean_env(POWERCONTEXT_HOOK_STATE_DIR=str(tmp_path / "empty-state"))
    missing = pc("hosts", "doctor", "--url", server.base_url, cwd=project, env=env)
    assert missing.returncode == 1
    assert any(line.startswith("FAIL") and "scope-exists" in line for line in missing.stdout.splitlines())
    assert "hook" in missing.stdout and "not registered" in missing.stdout
    down = pc("hosts", "doctor", "--url", f"http://127.0.0.1:{free_port()}", cwd=project, env=env)
    assert down.returncode == 1
    assert any(line.startswith("FAIL") and " server " in line for line in down.stdout.splitlines())


@pytest.mark.parametrize(("host", "root_var"), [("claude-code", "CLAUDE_PLUGIN_ROOT"), ("codex", "PLUGIN_ROOT")])
def test_shipped_plugin_hook_runs_and_injects(
    host: str, root_var: str, server: LiveServer, api: Api, project: Path, tmp_path: Path
) -> None:
    plugin = INTEGRATIONS / host
    manifest_dir = ".claude-plugin" if host == "claude-code" else ".codex-plugin"
    manifest = json.loads((plugin / manifest_dir / "plugin.json").read_text())
    assert manifest["name"] == "powercontext"
    assert (plugin / manifest["hooks"]).is_file() and (plugin / manifest["mcpServers"]).is_file()
    mcp = json.loads((plugin / ".mcp.json").read_text())["mcpServers"]["powercontext"]
    assert mcp["args"] == ["mcp"]
    scope_id = api.new_scope(prefix="plugin")
    api.add(scope_id, "The staging database is reset every Monday", kind="fact")
    (project / ".powercontext.toml").write_text(f'scope_id = "{scope_id}"\n', encoding="utf-8")
    command = the_hook_command(plugin / manifest["hooks"])
    env = clean_env(
        POWERCONTEXT_URL=server.base_url,
        POWERCONTEXT_PYTHON=sys.executable,
        POWERCONTEXT_HOOK_STATE_DIR=str(tmp_path),
        **{root_var: str(plugin)},
    )
    payload = {"hook_event_name": "UserPromptSubmit", "cwd": str(project), "prompt": "when is staging reset?"}
    ran = run_shell_hook(command, payload, env)
    assert ran.returncode == 0, ran.stderr
    assert "every Monday" in json.loads(ran.stdout)["hookSpecificOutput"]["additionalContext"]
    # An interpreter without PowerContext: the shim still exits 0 and injects nothing.
    bare = run_shell_hook(command, payload, {**env, "POWERCONTEXT_PYTHON": "/usr/bin/python3", "PYTHONPATH": ""})
    assert bare.returncode == 0 and bare.stdout == ""
