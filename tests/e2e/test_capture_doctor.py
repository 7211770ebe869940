"""What ``hosts doctor`` and ``/v1/capabilities`` say about capture: on or off, the extractor, the pending count."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import LiveServer
from tests.support import Api

CLI = [sys.executable, "-m", "powercontext"]


def _doctor(project: Path, url: str, **extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env.update(HOME=str(project / "home"), **extra)
    done = subprocess.run(
        [*CLI, "hosts", "doctor", "--url", url], cwd=project, env=env, capture_output=True, text=True, timeout=60
    )
    return done.stdout


def test_doctor_and_capabilities_report_capture_and_pending_sources(server: LiveServer, tmp_path: Path) -> None:
    api = Api(server.base_url)
    try:
        scope_id = api.new_scope()
        r = api.post(f"/v1/scopes/{scope_id}/sources", {"kind": "prompt", "content": "what broke the build?"})
        assert r.status_code == 201
        extraction = api.get("/v1/capabilities").json()["extraction"]
        assert extraction["extractor"] == "explicit" and extraction["source_max_bytes"] == 65536
        assert extraction["pending_sources"] >= 1
    finally:
        api.close()
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / ".powercontext.toml").write_text(f'scope_id = "{scope_id}"\n', encoding="utf-8")
    on = [line for line in _doctor(project, server.base_url).splitlines() if "capture" in line]
    assert len(on) == 1 and "explicit statements only" in on[0] and "Source(s) pending" in on[0]
    off = [
        line for line in _doctor(project, server.base_url, POWERCONTEXT_CAPTURE="off").splitlines() if "capture" in line
    ]
    assert len(off) == 1 and "off" in off[0]
    (project / ".powercontext.toml").write_text(f'scope_id = "{scope_id}"\ncapture = false\n', encoding="utf-8")
    off = [line for line in _doctor(project, server.base_url).splitlines() if "capture" in line]
    assert len(off) == 1 and "off" in off[0]
