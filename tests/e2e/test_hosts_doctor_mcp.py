"""``hosts doctor`` starts each host's configured MCP server as the host would and checks that its tools reach
the Server (URL and token as that process resolves them); a stale per-machine URL gets a fix line that works."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from tests.conftest import LiveServer, live_server
from tests.e2e.test_hosts_cli import doctor_lines, home, pc, project, user_env
from tests.support import Api, free_port

__all__ = ["home", "project"]  # fixtures, shared with the other hosts CLI tests


def machine_file(home: Path) -> Path:
    return home / ".config" / "powercontext" / "hosts.json"


@pytest.mark.parametrize("host", ["claude-code", "codex"])
def test_doctor_follows_the_mcp_entry_to_the_server_and_names_a_stale_url(
    host: str, project: Path, home: Path, server: LiveServer, api: Api
) -> None:
    scope_id = api.new_scope(prefix="doctor-mcp")
    env = user_env(home)
    installed = pc(
        "hosts", "install", host, "--scope", scope_id, "--url", server.base_url, "--yes", cwd=project, env=env
    )
    assert installed.returncode == 0, installed.stderr

    healthy = pc("hosts", "doctor", "--host", host, cwd=project, env=env)
    assert healthy.returncode == 0, healthy.stdout
    reach = doctor_lines(healthy.stdout)[f"{host}-mcp-reach"]
    assert reach.startswith("✔") and server.base_url in reach and "hosts.json" in reach, reach

    # The URL recorded for this machine goes stale (the Server moved): the hook and MCP server look elsewhere.
    dead = f"http://127.0.0.1:{free_port()}"
    data = json.loads(machine_file(home).read_text())
    data["projects"][str(project)]["url"] = dead
    machine_file(home).write_text(json.dumps(data))
    stale = pc("hosts", "doctor", "--host", host, "--url", server.base_url, "--json", cwd=project, env=env)
    assert stale.returncode == 1
    checks = {c["name"]: c for c in json.loads(stale.stdout)["checks"]}
    assert checks[f"{host}-mcp-server"]["status"] == "ok"  # it starts and answers initialize ...
    broken = checks[f"{host}-mcp-reach"]  # ... but its tools would talk to nothing
    assert broken["status"] == "fail" and dead in broken["detail"], broken
    assert broken["fix"] == f"powercontext hosts install {host} --url {server.base_url} --yes"

    assert pc(*broken["fix"].split()[1:], cwd=project, env=env).returncode == 0  # the printed fix, run as printed
    fixed = pc("hosts", "doctor", "--host", host, cwd=project, env=env)
    assert fixed.returncode == 0, fixed.stdout
    assert doctor_lines(fixed.stdout)[f"{host}-mcp-reach"].startswith("✔")


def test_doctor_says_when_codex_would_not_pass_the_url_to_its_mcp_server(
    project: Path, home: Path, server: LiveServer, api: Api
) -> None:
    scope_id = api.new_scope(prefix="doctor-env")
    # Installed without a URL (so none is recorded); the user's environment has it when doctor runs.
    installed = pc("hosts", "install", "codex", "--scope", scope_id, "--yes", cwd=project, env=user_env(home))
    assert installed.returncode == 0
    env = user_env(home, POWERCONTEXT_URL=server.base_url)
    assert pc("hosts", "doctor", "--host", "codex", cwd=project, env=env).returncode == 0
    config = project / ".codex" / "config.toml"
    config.write_text(
        config.read_text().replace('env_vars = ["POWERCONTEXT_URL", "POWERCONTEXT_TOKEN"]', "env_vars = []")
    )
    done = pc("hosts", "doctor", "--host", "codex", cwd=project, env=env)
    assert done.returncode == 1
    lines = doctor_lines(done.stdout)
    assert lines["codex-mcp-env"].startswith("✘")
    # Without POWERCONTEXT_URL the MCP server falls back to the default URL, and doctor says it looked there.
    assert "http://127.0.0.1:8765 (URL from the default)" in lines["codex-mcp-reach"]


def test_doctor_names_a_token_the_server_refuses_and_the_fix_works(project: Path, home: Path, tmp_path: Path) -> None:
    good = "doctor-reader-token-1"
    grants = {"principals": [{"name": "r", "token_sha256": hashlib.sha256(good.encode()).hexdigest(), "read": ["*"]}]}
    (tmp_path / "access.json").write_text(json.dumps(grants), encoding="utf-8")
    with live_server(tmp_path, {"POWERCONTEXT_ACCESS_FILE": str(tmp_path / "access.json")}) as server:
        stale_token = user_env(home, POWERCONTEXT_TOKEN="a-revoked-token")
        args = ("hosts", "install", "claude-code", "--url", server.base_url, "--yes")
        assert pc(*args, cwd=project, env=stale_token).returncode == 0  # records URL and token for this machine
        env = user_env(home)
        refused = pc("hosts", "doctor", "--host", "claude-code", cwd=project, env=env)
        assert refused.returncode == 1
        line = doctor_lines(refused.stdout)["claude-code-mcp-reach"]
        assert line.startswith("✘") and "refused its token" in line and "hosts.json" in line, refused.stdout
        assert "a-revoked-token" not in refused.stdout  # where the token came from, never the token
        fix = "POWERCONTEXT_TOKEN=<a token from the Server's access file> powercontext hosts install claude-code --yes"
        assert fix in refused.stdout
        # The fix as printed, with a valid token for the placeholder.
        assert (
            pc(
                "hosts", "install", "claude-code", "--yes", cwd=project, env={**env, "POWERCONTEXT_TOKEN": good}
            ).returncode
            == 0
        )
        fixed = pc("hosts", "doctor", "--host", "claude-code", cwd=project, env=env)
        assert doctor_lines(fixed.stdout)["claude-code-mcp-reach"].startswith("✔"), fixed.stdout
