"""Hosts whose plugin is user-level (DSH, Hermes): what install writes in the user's host config, and that
uninstall takes it away again once no other project on the machine uses it, leaving the user's own lines.

Run through the real CLI in a throwaway HOME; the hosts themselves run in tests/e2e/test_host_clis_*.py.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests import forked
from tests.e2e.test_hosts_cli import VENV_BIN

USER_PATCHES = "# my own layer\n- id: time-context\n  config:\n    timeZone: Europe/Paris\n"
USER_HERMES = "model:\n  default: fake-model\n"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def new_project(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    (root / ".git").mkdir(parents=True)
    return root.resolve()


@pytest.fixture
def env(home: Path) -> dict[str, str]:
    drop = ("POWERCONTEXT_", "XDG_", "DSH_", "HERMES_")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    clean.update(HOME=str(home), PATH=os.pathsep.join([VENV_BIN, "/usr/bin", "/bin"]))
    return clean


def pc(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return forked.run([*forked.POWERCONTEXT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_dsh_install_loads_the_plugin_from_the_home_layer_and_keeps_the_users_patches(
    tmp_path: Path, home: Path, env: dict[str, str]
) -> None:
    dsh_home = home / ".dsh"
    dsh_home.mkdir()
    (dsh_home / "cordis.patch.yml").write_text(USER_PATCHES, encoding="utf-8")
    project = new_project(tmp_path, "proj")
    done = pc("hosts", "install", "dsh", "--scope", "project:x", "--yes", cwd=project, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    plugin = dsh_home / "powercontext" / "recall.mjs"
    patches = (dsh_home / "cordis.patch.yml").read_text(encoding="utf-8")
    assert patches.startswith(USER_PATCHES)
    assert f"- insert:\n    - id: powercontext-recall\n      name: {json.dumps(str(plugin))}\n" in patches
    assert 'const HOST = "dsh"' in plugin.read_text(encoding="utf-8")
    opt_in = project / ".dsh" / "powercontext.json"
    assert json.loads(opt_in.read_text(encoding="utf-8"))["recall"] is True
    # The committed file names nothing of this machine.
    assert str(home) not in opt_in.read_text(encoding="utf-8") and VENV_BIN not in opt_in.read_text(encoding="utf-8")
    doctor = pc("hosts", "doctor", "--host", "dsh", "--url", "http://127.0.0.1:9", "--json", cwd=project, env=env)
    status = {c["name"]: c["status"] for c in json.loads(doctor.stdout)["checks"]}
    assert status["dsh-opt-in"] == status["dsh-plugin"] == status["dsh-loaded"] == "ok", doctor.stdout


def test_dsh_loading_code_into_every_run_needs_consent(tmp_path: Path, home: Path, env: dict[str, str]) -> None:
    project = new_project(tmp_path, "proj")
    done = pc("hosts", "install", "dsh", cwd=project, env=env)  # stdin is no terminal: nobody to ask
    assert done.returncode == 1, done.stdout + done.stderr
    assert "cordis.patch.yml" in done.stdout and "--yes" in done.stderr
    assert not (home / ".dsh" / "cordis.patch.yml").exists()


def test_dsh_install_refuses_a_patch_file_it_cannot_append_to(tmp_path: Path, home: Path, env: dict[str, str]) -> None:
    (home / ".dsh").mkdir()
    flow = "[{id: time-context, disabled: true}]\n"
    (home / ".dsh" / "cordis.patch.yml").write_text(flow, encoding="utf-8")
    project = new_project(tmp_path, "proj")
    done = pc("hosts", "install", "dsh", "--yes", cwd=project, env=env)
    assert done.returncode == 2
    assert "not a block-style YAML list" in done.stderr and "powercontext-recall" in done.stderr
    assert (home / ".dsh" / "cordis.patch.yml").read_text(encoding="utf-8") == flow
    assert not (project / ".dsh").exists()


def test_dsh_uninstall_removes_the_user_plugin_with_the_last_project(
    tmp_path: Path, home: Path, env: dict[str, str]
) -> None:
    dsh_home = home / ".dsh"
    dsh_home.mkdir()
    (dsh_home / "cordis.patch.yml").write_text(USER_PATCHES, encoding="utf-8")
    first, second = new_project(tmp_path, "first"), new_project(tmp_path, "second")
    for project in (first, second):
        assert pc("hosts", "install", "dsh", "--yes", cwd=project, env=env).returncode == 0
    done = pc("hosts", "uninstall", "dsh", cwd=first, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (first / ".dsh" / "powercontext.json").exists()
    assert (dsh_home / "powercontext" / "recall.mjs").is_file(), "the second project still uses it"
    assert "powercontext-recall" in (dsh_home / "cordis.patch.yml").read_text(encoding="utf-8")
    done = pc("hosts", "uninstall", "dsh", cwd=second, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (dsh_home / "powercontext").exists()
    assert (dsh_home / "cordis.patch.yml").read_text(encoding="utf-8") == USER_PATCHES


def test_hermes_uninstall_removes_the_user_plugin_and_its_enabling_block_with_the_last_project(
    tmp_path: Path, home: Path, env: dict[str, str]
) -> None:
    hermes_home = home / ".hermes"
    hermes_home.mkdir()
    (hermes_home / "config.yaml").write_text(USER_HERMES, encoding="utf-8")
    first, second = new_project(tmp_path, "first"), new_project(tmp_path, "second")
    for project in (first, second):
        done = pc("hosts", "install", "hermes", "--yes", cwd=project, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
    plugin_dir = hermes_home / "plugins" / "powercontext"
    # What Hermes leaves when it imports the plugin, and a plugin of the user's own beside it.
    (plugin_dir / "__pycache__").mkdir()
    (plugin_dir / "__pycache__" / "__init__.cpython-312.pyc").write_bytes(b"\x00bytecode")
    (hermes_home / "plugins" / "mine").mkdir()
    assert pc("hosts", "uninstall", "hermes", cwd=first, env=env).returncode == 0
    assert (plugin_dir / "__init__.py").is_file(), "the second project still uses it"
    assert "- powercontext" in (hermes_home / "config.yaml").read_text(encoding="utf-8")
    done = pc("hosts", "uninstall", "hermes", "--json", cwd=second, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    removed = {c["path"] for c in json.loads(done.stdout)["changes"]}
    assert str(plugin_dir / "__init__.py") in removed and str(hermes_home / "config.yaml") in removed
    assert not plugin_dir.exists()
    assert (hermes_home / "plugins" / "mine").is_dir()
    assert (hermes_home / "config.yaml").read_text(encoding="utf-8") == USER_HERMES


def test_install_creates_a_host_config_directory_that_does_not_exist_yet(tmp_path: Path, env: dict[str, str]) -> None:
    """A fresh machine: ``$DSH_HOME`` named but not there, nor its parent (no DSH run yet)."""
    dsh_home = tmp_path / "not-yet" / "dsh-home"
    project = new_project(tmp_path, "proj")
    done = pc("hosts", "install", "dsh", "--yes", cwd=project, env={**env, "DSH_HOME": str(dsh_home)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert (dsh_home / "powercontext" / "recall.mjs").is_file() and (dsh_home / "cordis.patch.yml").is_file()
