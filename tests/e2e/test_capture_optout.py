"""Capture fails safe: an opt-out the hook does not recognise (``POWERCONTEXT_CAPTURE=disabled``, ``capure = false``
in ``.powercontext.toml``) records nothing, the hook says why on stderr, and ``hosts doctor`` names the value or
key and the fix. Real hook and CLI processes against the live Server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import LiveServer
from tests.support import Api, wait_until

HOOK = [sys.executable, "-m", "powercontext.hosts.hook", "claude-code"]
CLI = [sys.executable, "-m", "powercontext"]


def _env(project: Path, url: str, extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env.update(
        HOME=str(project / "home"),
        POWERCONTEXT_URL=url,
        POWERCONTEXT_HOOK_STATE_DIR=str(project / "state"),
        POWERCONTEXT_HOOK_QUIET="1",
        **extra,
    )
    return env


def _hook(project: Path, url: str, **extra: str) -> subprocess.CompletedProcess[str]:
    data = {"prompt": "what did we decide about the deploy window?", "cwd": str(project), "session_id": "s-1"}
    done = subprocess.run(
        HOOK, input=json.dumps(data), capture_output=True, text=True, env=_env(project, url, extra), timeout=30
    )
    assert done.returncode == 0, done.stderr
    return done


def _doctor(project: Path, url: str, **extra: str) -> list[str]:
    done = subprocess.run(
        [*CLI, "hosts", "doctor", "--url", url],
        cwd=project,
        env=_env(project, url, extra),
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout.splitlines()


def _project(tmp_path: Path, toml: str) -> Path:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / ".powercontext.toml").write_text(toml, encoding="utf-8")
    return project


def _captured(api: Api, scope_id: str) -> int:
    return len(api.get(f"/v1/scopes/{scope_id}/sources?limit=200").json()["items"])


def _captured_nothing_then_control(api: Api, project: Path, url: str, scope_id: str, **control: str) -> None:
    """The run before captured nothing: a capturing run afterwards is the only Source (the first run's process has
    exited, so its Source, had it sent one, was stored before this one)."""
    _hook(project, url, **control)
    assert wait_until(lambda: _captured(api, scope_id) >= 1, timeout=10)
    time.sleep(0.3)
    assert _captured(api, scope_id) == 1


@pytest.mark.parametrize("value", ["disabled", "none", "nope", "Off-ish"])
def test_an_unrecognised_capture_value_captures_nothing_and_says_why(
    value: str, server: LiveServer, api: Api, tmp_path: Path
) -> None:
    scope_id = api.new_scope()
    project = _project(tmp_path, f'scope_id = "{scope_id}"\n')
    done = _hook(project, server.base_url, POWERCONTEXT_CAPTURE=value)
    lines = [json.loads(line) for line in done.stderr.splitlines()]
    off = [line for line in lines if line["component"] == "powercontext.claude_code.capture"]
    assert off == [
        {
            "component": "powercontext.claude_code.capture",
            "event": "capture",
            "outcome": "off",
            "reason": "unrecognised_setting",
        }
    ]  # fmt: skip  (the reason, never the value)
    _captured_nothing_then_control(api, project, server.base_url, scope_id, POWERCONTEXT_CAPTURE=" On ")
    doctor = [line for line in _doctor(project, server.base_url, POWERCONTEXT_CAPTURE=value) if "capture" in line]
    assert f"off: POWERCONTEXT_CAPTURE={value!r} is not an on or off word" in doctor[0]
    assert "fix: export POWERCONTEXT_CAPTURE=off to keep capture off (or on)" in doctor[1]


@pytest.mark.parametrize("value", [" OFF ", "0", "False", "no"])
def test_every_off_word_captures_nothing_silently(value: str, server: LiveServer, api: Api, tmp_path: Path) -> None:
    scope_id = api.new_scope()
    project = _project(tmp_path, f'scope_id = "{scope_id}"\n')
    done = _hook(project, server.base_url, POWERCONTEXT_CAPTURE=value)
    assert "capture" not in done.stderr
    _captured_nothing_then_control(api, project, server.base_url, scope_id, POWERCONTEXT_CAPTURE="yes")


@pytest.mark.parametrize(("line", "key"), [("capure = false", "capure"), ("Capture = false", "Capture")])
def test_a_misspelt_capture_key_turns_capture_off_keeps_recall_and_doctor_names_it(
    line: str, key: str, server: LiveServer, api: Api, tmp_path: Path
) -> None:
    scope_id = api.new_scope()
    api.add(scope_id, "We decided the deploy window is Tuesday mornings.")
    project = _project(tmp_path, f'scope_id = "{scope_id}"\n{line}\n')
    done = _hook(project, server.base_url)
    # Recall still works (a key of a newer version must not stop it); only capture is off.
    assert "deploy window is Tuesday" in done.stdout
    said = _doctor(project, server.base_url)
    capture = next(i for i, text in enumerate(said) if " capture " in text)
    assert f"off: .powercontext.toml: unknown key {key!r}; did you mean 'capture'?" in said[capture]
    assert "fix: edit .powercontext.toml" in said[capture + 1]
    assert any(" scope " in text and scope_id in text for text in said)
    (project / ".powercontext.toml").write_text(f'scope_id = "{scope_id}"\n', encoding="utf-8")
    _captured_nothing_then_control(api, project, server.base_url, scope_id)


def test_binding_the_project_to_another_scope_keeps_its_capture_opt_out(
    server: LiveServer, api: Api, tmp_path: Path
) -> None:
    first, second = api.new_scope(), api.new_scope()
    project = _project(tmp_path, f'# our settings\nscope_id = "{first}"\ncapture = false\n')
    done = subprocess.run(
        [*CLI, "hosts", "install", "claude-code", "--scope", second, "--project", str(project), "--yes"],
        env=_env(project, server.base_url, {}),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    config = (project / ".powercontext.toml").read_text(encoding="utf-8")
    assert config == f'# our settings\nscope_id = "{second}"\ncapture = false\n'
    _hook(project, server.base_url)  # kept off: captures nothing
    (project / ".powercontext.toml").write_text(f'scope_id = "{second}"\n', encoding="utf-8")
    _captured_nothing_then_control(api, project, server.base_url, second)
