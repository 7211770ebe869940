"""Per-machine hook entries of Claude Code, Codex and WorkBuddy, through the real CLI in a throwaway HOME.

After the README's install ``powercontext`` is only in ``.venv/bin``. Install then writes, besides the portable
committed entry, this machine's entry naming the interpreter (never in a committed file); the committed entry
run from PATH stands down when that entry is registered; the dry run warns exactly as the install does;
re-installing with ``powercontext`` on PATH removes the machine's entries; uninstall gives everything back;
Codex's per-machine hooks of several projects stay trusted when one project is uninstalled; and a hostile
repository cannot make install write, or the hook read, through a planted link.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from powercontext.hosts.codex import trust_hash
from tests.e2e.test_hosts_cli import VENV_BIN, doctor_lines, pc, run_shell_hook, snapshot
from tests.e2e.test_hosts_framework import _tree

MACHINE_FILES = {"claude-code": ".claude/settings.local.json", "workbuddy": ".codebuddy/settings.local.json"}
COMMITTED = {
    "claude-code": [".claude/settings.json", ".mcp.json"],
    "workbuddy": [".codebuddy/settings.json"],
    "codex": [".codex/hooks.json", ".codex/config.toml"],
}


def env_for(home: Path, on_path: bool) -> dict[str, str]:
    prefixes = ("POWERCONTEXT_", "XDG_", "CODEX_", "CLAUDE_", "CODEBUDDY", "VIRTUAL_ENV")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env.update(HOME=str(home), PATH=os.pathsep.join([*([VENV_BIN] if on_path else []), "/usr/bin", "/bin"]))
    return env


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def new_project(tmp_path: Path, name: str = "proj") -> Path:
    root = tmp_path / name
    (root / ".git").mkdir(parents=True)
    return root.resolve()


def hook_commands(path: Path, event: str = "UserPromptSubmit") -> list[str]:
    entries = json.loads(path.read_text())["hooks"][event]
    return [str(h["command"]) for e in entries for h in e["hooks"]]


@pytest.mark.parametrize("host", ["claude-code", "workbuddy"])
def test_without_powercontext_on_path_the_machine_entry_names_the_interpreter(
    host: str, tmp_path: Path, home: Path
) -> None:
    project = new_project(tmp_path)
    off = env_for(home, on_path=False)
    dry = pc("hosts", "install", host, "--scope", "project:x", "--dry-run", cwd=project, env=off)
    real = pc("hosts", "install", host, "--scope", "project:x", "--yes", cwd=project, env=off)
    assert dry.returncode == 0 and real.returncode == 0, dry.stderr + real.stderr
    warnings = [line for line in real.stderr.splitlines() if line.strip()]
    assert warnings and all(line in dry.stderr for line in warnings), (dry.stderr, real.stderr)
    assert "pipx install powercontext" not in real.stderr + dry.stderr
    machine = project / MACHINE_FILES[host]
    assert hook_commands(machine) == [f"{sys.executable} -m powercontext.hosts.hook {host}"]
    if host == "claude-code":  # the capture hook follows the same rule
        assert hook_commands(machine, "Stop") == [f"{sys.executable} -m powercontext.hosts.hook {host} stop"]
    for name in COMMITTED[host]:
        assert sys.executable not in (project / name).read_text() and VENV_BIN not in (project / name).read_text()
    assert hook_commands(project / COMMITTED[host][0]) == [f"powercontext hook {host}"]
    doctor = pc("hosts", "doctor", "--host", host, "--url", "http://127.0.0.1:9", cwd=project, env=off)
    line = doctor_lines(doctor.stdout)[f"{host}-hook-command"]
    assert line.startswith("✔") and sys.executable in line, doctor.stdout

    # Later, `powercontext` on PATH (pipx): install again removes this machine's entries; the committed one runs.
    again = pc("hosts", "install", host, "--scope", "project:x", "--yes", cwd=project, env=env_for(home, True))
    assert again.returncode == 0, again.stderr
    assert not machine.exists() or "powercontext.hosts.hook" not in machine.read_text()


@pytest.mark.parametrize("host", ["claude-code", "workbuddy"])
def test_the_committed_hook_stands_down_only_for_a_real_machine_entry(host: str, tmp_path: Path, home: Path) -> None:
    """Both entries run on every prompt; the portable one injects nothing while this machine's entry (with an
    existing interpreter) is registered, and works again when that entry is gone or is a planted link."""
    project = new_project(tmp_path)
    off = env_for(home, on_path=False)
    assert pc("hosts", "install", host, "--yes", cwd=project, env=off).returncode == 0
    payload = {"hook_event_name": "UserPromptSubmit", "cwd": str(project), "prompt": "how do deploys work?"}
    on = {**env_for(home, on_path=True), "POWERCONTEXT_URL": "http://127.0.0.1:9", "POWERCONTEXT_SCOPE": "p:x"}
    committed = run_shell_hook(f"powercontext hook {host}", payload, on)
    assert committed.returncode == 0 and committed.stdout == ""
    assert '"reason":"machine_entry"' in committed.stderr
    machine = project / MACHINE_FILES[host]
    text = machine.read_text()
    for planted in ("a link", "a missing interpreter"):
        machine.unlink()
        if planted == "a link":
            (tmp_path / "elsewhere.json").write_text(text)
            machine.symlink_to(tmp_path / "elsewhere.json")
        else:
            machine.write_text(text.replace(sys.executable, str(tmp_path / "gone" / "python")))
        ran = run_shell_hook(f"powercontext hook {host}", payload, on)
        assert ran.returncode == 0 and '"reason":"machine_entry"' not in ran.stderr, (planted, ran.stderr)
        assert '"outcome":"server_unavailable"' in ran.stderr, ran.stderr


@pytest.mark.parametrize("host", ["claude-code", "workbuddy"])
def test_a_planted_machine_settings_link_is_refused(host: str, tmp_path: Path, home: Path) -> None:
    project = new_project(tmp_path)
    victim = tmp_path / "victim.json"
    victim.write_text('{"mine": true}\n')
    target = project / MACHINE_FILES[host]
    target.parent.mkdir(parents=True)
    target.symlink_to(victim)
    done = pc("hosts", "install", host, "--yes", cwd=project, env=env_for(home, on_path=False))
    assert done.returncode == 2 and "symbolic link" in done.stderr and str(target) in done.stderr
    assert victim.read_text() == '{"mine": true}\n'


@pytest.mark.parametrize("host", ["claude-code", "workbuddy", "codex"])
def test_uninstall_gives_back_everything_the_machine_entries_took(host: str, tmp_path: Path, home: Path) -> None:
    project = new_project(tmp_path)
    (home / ".config").mkdir()
    (home / ".claude.json").write_text('{"numStartups": 3}\n', encoding="utf-8")
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text('model = "mine"\n', encoding="utf-8")
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.local.json").write_text('{"permissions": {"allow": ["Bash(ls)"]}}\n')
    before = (_tree(project), _tree(home))
    off = env_for(home, on_path=False)
    assert pc("hosts", "install", host, "--scope", "project:x", "--yes", cwd=project, env=off).returncode == 0
    assert sys.executable in "".join(snapshot(project, home).values())
    assert pc("hosts", "uninstall", host, cwd=project, env=off).returncode == 0
    assert (_tree(project), _tree(home)) == before


def test_codex_keeps_each_projects_machine_hook_trusted_when_another_is_uninstalled(tmp_path: Path, home: Path) -> None:
    first, second = new_project(tmp_path, "first"), new_project(tmp_path, "second")
    off = env_for(home, on_path=False)
    for project in (first, second):
        done = pc("hosts", "install", "codex", "--yes", cwd=project, env=off)
        assert done.returncode == 0, done.stderr
    config = home / ".codex" / "config.toml"
    user = tomllib.loads(config.read_text())
    groups = user["hooks"]["UserPromptSubmit"]
    assert len(groups) == 2 and str(first) in groups[0]["hooks"][0]["command"]
    # Codex trusts a config hook by position; the committed hook is not trusted on this machine (so one runs).
    for index, group in enumerate(groups):
        handler = {**group["hooks"][0], "async": False}
        assert user["hooks"]["state"][f"{config}:user_prompt_submit:{index}:0"]["trusted_hash"] == trust_hash(handler)
    assert not any(".codex/hooks.json" in key for key in user["hooks"]["state"])

    assert pc("hosts", "uninstall", "codex", cwd=first, env=off).returncode == 0
    user = tomllib.loads(config.read_text())
    (group,) = user["hooks"]["UserPromptSubmit"]
    assert str(second) in group["hooks"][0]["command"]
    assert user["hooks"]["state"] == {
        f"{config}:user_prompt_submit:0:0": {"trusted_hash": trust_hash(group["hooks"][0])}
    }
    doctor = pc("hosts", "doctor", "--host", "codex", "--url", "http://127.0.0.1:9", cwd=second, env=off)
    lines = doctor_lines(doctor.stdout)
    assert lines["codex-hook-trust"].startswith("✔") and lines["codex-hook-command"].startswith("✔"), doctor.stdout


def test_codexs_machine_hook_runs_only_inside_its_project(tmp_path: Path, home: Path) -> None:
    project, other = new_project(tmp_path), new_project(tmp_path, "other")
    (project / "pkg").mkdir()
    off = env_for(home, on_path=False)
    assert pc("hosts", "install", "codex", "--yes", cwd=project, env=off).returncode == 0
    command = tomllib.loads((home / ".codex" / "config.toml").read_text())["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    env = {**off, "POWERCONTEXT_URL": "http://127.0.0.1:9", "POWERCONTEXT_SCOPE": "p:x"}
    payload = {"hook_event_name": "UserPromptSubmit", "prompt": "how do deploys work?"}
    for cwd, runs in ((project / "pkg", True), (other, False), (tmp_path, False)):
        ran = subprocess.run(
            ["bash", "-c", command["command"]],
            input=json.dumps({**payload, "cwd": str(cwd)}),
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
            timeout=30,
        )
        assert ran.returncode == 0
        assert ('"outcome":"server_unavailable"' in ran.stderr) is runs, (cwd, ran.stderr)
