"""QA pass on ``hosts uninstall`` and ``hosts doctor``, run through the real CLI in a throwaway HOME:

* install then uninstall of every host gives back the home directory exactly as it was: no file install
  created (``~/.hermes/config.yaml``) and no directory it created (``~/.hermes``, ``~/.dsh``, ``~/.config``) is
  left, and a directory that existed before (even empty) stays;
* uninstalling OpenCode gives back the user's own ``opencode.json`` byte for byte;
* doctor says when OpenCode's MCP entry cannot start because ``powercontext`` is not on PATH.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from powercontext.hosts.registry import HOSTS
from tests.e2e.test_hosts_cli import VENV_BIN
from tests.e2e.test_hosts_framework import home, pc, project

__all__ = ["home", "project"]  # fixtures


def _env(home: Path, path: str | None = None) -> dict[str, str]:
    prefixes = ("POWERCONTEXT_", "XDG_", "CODEX_", "CLAUDE_", "DSH_", "HERMES_")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    clean.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    clean["PATH"] = path if path is not None else os.pathsep.join([VENV_BIN, "/usr/bin", "/bin"])
    return clean


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every file with its bytes and every directory (None), under ``root``."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("kept", [(), (".config", ".hermes", ".dsh", ".codex")], ids=["fresh-home", "empty-dirs"])
def test_install_then_uninstall_gives_back_the_home_exactly(
    host: str, kept: tuple[str, ...], project: Path, home: Path
) -> None:
    for name in kept:  # existed before install, empty: must stay
        (home / name).mkdir()
    env = _env(home)
    before = (_tree(project), _tree(home))
    done = pc("hosts", "install", host, "--scope", "project:p", "--yes", cwd=project, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _tree(home) != before[1]
    done = pc("hosts", "uninstall", host, cwd=project, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (_tree(project), _tree(home)) == before


def test_two_user_level_hosts_in_two_projects_leave_nothing(tmp_path: Path, home: Path) -> None:
    env = _env(home)
    projects = [tmp_path / "a", tmp_path / "b"]
    for root in projects:
        (root / ".git").mkdir(parents=True)
        for host in ("dsh", "hermes"):
            done = pc("hosts", "install", host, "--scope", "project:p", "--yes", cwd=root, env=env)
            assert done.returncode == 0, done.stdout + done.stderr
    for root in projects:
        for host in ("dsh", "hermes"):
            assert pc("hosts", "uninstall", host, cwd=root, env=env).returncode == 0
    assert _tree(home) == {}


USERS_OPENCODE = """{
    "$schema": "https://opencode.ai/config.json",
    "plugin": ["opencode-wakatime", "./mine.js"],
    "mcp": {
        "other": {"type": "local", "command": ["other-mcp", "--flag"], "enabled": true}
    },
    "theme": "tokyonight"
}
"""


def test_opencode_uninstall_gives_back_the_users_file_byte_for_byte(project: Path, home: Path) -> None:
    (project / "opencode.json").write_text(USERS_OPENCODE, encoding="utf-8")
    env = _env(home)
    for _ in range(2):  # re-running install still gives the original back
        assert pc("hosts", "install", "opencode", "--yes", cwd=project, env=env).returncode == 0
    config = json.loads((project / "opencode.json").read_text(encoding="utf-8"))
    assert config["plugin"] == ["opencode-wakatime", "./mine.js", "./.powercontext/opencode.js"]
    assert set(config["mcp"]) == {"other", "powercontext"}
    assert pc("hosts", "uninstall", "opencode", cwd=project, env=env).returncode == 0
    assert (project / "opencode.json").read_text(encoding="utf-8") == USERS_OPENCODE


def test_opencode_uninstall_after_a_user_edit_keeps_the_edit(project: Path, home: Path) -> None:
    (project / "opencode.json").write_text(USERS_OPENCODE, encoding="utf-8")
    env = _env(home)
    assert pc("hosts", "install", "opencode", "--yes", cwd=project, env=env).returncode == 0
    config = json.loads((project / "opencode.json").read_text(encoding="utf-8"))
    config["theme"] = "gruvbox"
    (project / "opencode.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    assert pc("hosts", "uninstall", "opencode", cwd=project, env=env).returncode == 0
    after = json.loads((project / "opencode.json").read_text(encoding="utf-8"))
    assert after == {**json.loads(USERS_OPENCODE), "theme": "gruvbox"}


def test_doctor_says_opencodes_mcp_entry_needs_powercontext_on_path(project: Path, home: Path) -> None:
    off = _env(home, path="/usr/bin:/bin")
    installed = pc("hosts", "install", "opencode", "--scope", "project:p", "--yes", cwd=project, env=off)
    assert installed.returncode == 0, installed.stderr
    assert "it will not start until it is" in installed.stderr
    doctor = pc("hosts", "doctor", "--host", "opencode", "--json", cwd=project, env=off)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["opencode-mcp"]["status"] == "fail", doctor.stdout
    assert "not on PATH" in checks["opencode-mcp"]["detail"]
    assert "pipx install -e " in checks["opencode-mcp"]["fix"]
    assert doctor.returncode == 1
    on_path = pc("hosts", "doctor", "--host", "opencode", "--json", cwd=project, env=_env(home))
    checks = {c["name"]: c for c in json.loads(on_path.stdout)["checks"]}
    assert checks["opencode-mcp"]["status"] == "ok", on_path.stdout
