"""``powercontext hosts install|uninstall|doctor`` for OpenCode and Pi, run as a user runs them (no host CLI needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forked
from tests.conftest import LiveServer
from tests.support import Api

PC = [sys.executable, "-m", "powercontext"]
PORTABILITY_LEAKS = (sys.executable, str(Path(sys.executable).parent), "127.0.0.1", "POWERCONTEXT_TOKEN")


def pc(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return forked.run([*PC, *args], cwd=str(cwd), env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    # `powercontext` on PATH is how the extensions find their interpreter.
    clean["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), clean.get("PATH", "")])
    clean["POWERCONTEXT_HOOK_STATE_DIR"] = str(tmp_path / "state")
    clean["XDG_CONFIG_HOME"] = str(tmp_path / "config")  # this machine's settings: never the real user's
    return clean


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


def test_opencode_install_keeps_other_entries_and_uninstall_removes_exactly_its_own(
    project: Path, env: dict[str, str]
) -> None:
    theirs = {"plugin": ["some-plugin@1.0.0"], "mcp": {"other": {"type": "remote", "url": "https://x"}}, "theme": "t"}
    (project / "opencode.json").write_text(json.dumps(theirs))
    before = snapshot(project)

    dry = pc("hosts", "install", "opencode", "--scope", "project:x", "--dry-run", cwd=project, env=env)
    assert dry.returncode == 0, dry.stderr
    assert "would create" in dry.stdout and "opencode.js" in dry.stdout
    assert snapshot(project) == before, "--dry-run writes nothing"

    for _ in range(2):  # re-running replaces PowerContext's entries, never duplicates them
        done = pc("hosts", "install", "opencode", "--scope", "project:x", "--yes", cwd=project, env=env)
        assert done.returncode == 0, done.stderr
    config = json.loads((project / "opencode.json").read_text())
    assert config["plugin"] == ["some-plugin@1.0.0", "./.powercontext/opencode.js"]
    assert config["mcp"]["other"] == theirs["mcp"]["other"]
    assert config["mcp"]["powercontext"] == {"type": "local", "command": ["powercontext", "mcp"], "enabled": True}
    assert config["theme"] == "t"
    assert (project / ".powercontext.toml").read_text() == 'scope_id = "project:x"\n'
    assert not (project / ".opencode").exists(), "no .opencode/ directory: OpenCode would install packages for it"
    for name in ("opencode.json", ".powercontext/opencode.js"):
        text = (project / name).read_text()
        assert not [leak for leak in PORTABILITY_LEAKS if leak in text], f"{name} is not portable"

    gone = pc("hosts", "uninstall", "opencode", cwd=project, env=env)
    assert gone.returncode == 0, gone.stderr
    assert json.loads((project / "opencode.json").read_text()) == theirs
    assert not (project / ".powercontext" / "opencode.js").exists()


def test_pi_install_and_uninstall(project: Path, env: dict[str, str]) -> None:
    done = pc("hosts", "install", "pi", "--scope", "project:x", "--yes", cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    extension = project / ".pi" / "extensions" / "powercontext.ts"
    assert "before_agent_start" in extension.read_text()
    assert not [leak for leak in PORTABILITY_LEAKS if leak in extension.read_text()]
    assert pc("hosts", "uninstall", "pi", cwd=project, env=env).returncode == 0
    assert not extension.exists()
    again = pc("hosts", "uninstall", "pi", cwd=project, env=env)
    assert again.returncode == 0 and "nothing to do" in again.stdout


def test_doctor_checks_what_opencode_and_pi_will_run(
    project: Path, env: dict[str, str], server: LiveServer, api: Api
) -> None:
    scope_id = api.new_scope(prefix="doctor-ext")
    for host in ("opencode", "pi"):
        assert pc("hosts", "install", host, "--scope", scope_id, "--yes", cwd=project, env=env).returncode == 0
    doctor = pc("hosts", "doctor", "--url", server.base_url, cwd=project, env=env)
    lines = {line.split()[1]: line for line in doctor.stdout.splitlines() if line.strip()}
    for name in ("opencode-plugin", "opencode-hook", "pi-extension", "pi-hook"):
        assert lines[name].startswith("✔"), doctor.stdout
    assert str(Path(sys.executable).parent) in lines["opencode-hook"]

    (project / ".pi" / "extensions" / "powercontext.ts").write_text("// edited\n")
    # Without `powercontext` on PATH the plugin still runs the hook: with the interpreter install recorded
    # for this machine (the README's install leaves `powercontext` only in .venv/bin).
    no_python = {**env, "PATH": "/usr/bin:/bin"}
    recorded = pc("hosts", "doctor", "--url", server.base_url, cwd=project, env=no_python)
    lines = {line.split()[1]: line for line in recorded.stdout.splitlines() if line.strip()}
    assert lines["pi-extension"].startswith("!") and "hosts install pi" in lines["pi-extension"]
    assert lines["pi-hook"].startswith("✔") and sys.executable in lines["pi-hook"], recorded.stdout
    # Nothing recorded and nothing on PATH: the fix installs this checkout, never the unrelated PyPI name.
    broken = pc(
        "hosts", "doctor", "--url", server.base_url, cwd=project, env={**no_python, "XDG_CONFIG_HOME": "/nonexistent"}
    )
    assert broken.returncode == 1
    lines = {line.split()[1]: line for line in broken.stdout.splitlines() if line.strip()}
    assert lines["pi-hook"].startswith("✘") and "POWERCONTEXT_PYTHON" in lines["pi-hook"]
    assert "pipx install -e " in broken.stdout and "pipx install powercontext" not in broken.stdout
