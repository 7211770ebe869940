"""The plugins under ``integrations/``: valid for each host's own loader, installable offline, portable."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.hosts_e2e.support import host_cli, make_sandbox
from tests.support import free_port

INTEGRATIONS = REPO_ROOT / "integrations"


def test_claude_code_plugin_validates_clean(tmp_path: Path) -> None:
    box = make_sandbox(tmp_path)
    done, _ = box.run([host_cli("claude"), "plugin", "validate", str(INTEGRATIONS / "claude-code")])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation passed" in done.stdout
    assert "These checks found nothing to report" in done.stdout, done.stdout  # no ICON_MISSING
    assert "Hosts not declared" not in done.stdout
    assert 'hooks: UserPromptSubmit command "powercontext hook claude-code"' in done.stdout


def test_codex_marketplace_installs_the_plugin_offline(tmp_path: Path) -> None:
    codex = host_cli("codex")
    box = make_sandbox(tmp_path)
    added, _ = box.run([codex, "plugin", "marketplace", "add", str(REPO_ROOT)])
    assert added.returncode == 0, added.stderr[-2000:]
    installed, _ = box.run([codex, "plugin", "add", "powercontext@powercontext"])
    assert installed.returncode == 0, installed.stderr[-2000:]
    listed, _ = box.run([codex, "plugin", "list"])
    line = next(row for row in listed.stdout.splitlines() if row.startswith("powercontext@powercontext"))
    assert "installed, enabled" in line and "0.1.0" in line
    cache = box.home / ".codex" / "plugins" / "cache" / "powercontext" / "powercontext" / "0.1.0"
    assert json.loads((cache / "hooks" / "hooks.json").read_text()) == json.loads(
        (INTEGRATIONS / "codex" / "hooks" / "hooks.json").read_text()
    )


@pytest.mark.parametrize("host", ["claude-code", "codex"])
def test_plugin_hooks_need_no_environment_variable(host: str, tmp_path: Path) -> None:
    """The shipped command is `powercontext hook HOST` from PATH: no interpreter variable, no plugin path."""
    hooks = json.loads((INTEGRATIONS / host / "hooks" / "hooks.json").read_text())["hooks"]["UserPromptSubmit"]
    command = hooks[0]["hooks"][0]["command"]
    assert command == f"powercontext hook {host}"
    box = make_sandbox(tmp_path, POWERCONTEXT_URL=f"http://127.0.0.1:{free_port()}", POWERCONTEXT_HOOK_QUIET="1")
    payload = {"session_id": "s", "cwd": str(box.project), "prompt": "anything", "hook_event_name": "UserPromptSubmit"}
    done = subprocess.run(
        command, shell=True, input=json.dumps(payload), capture_output=True, text=True, env=box.env, timeout=60
    )
    assert done.returncode == 0 and done.stdout == ""
    assert json.loads(done.stderr)["outcome"] == "server_unavailable"  # it ran, and failed open
