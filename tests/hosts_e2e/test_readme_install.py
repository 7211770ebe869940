"""The hook-style hosts after the README's install: ``powercontext`` only in ``.venv/bin``, never on PATH.

A new user runs ``.venv/bin/powercontext hosts install HOST`` in their project and starts the host from a shell
whose PATH has no ``powercontext``. Each real CLI (Claude Code, Codex, WorkBuddy's engine) must still run the
hook: install wrote this machine's entry naming the interpreter, and the memory's marker reaches the fake
model's request. Then ``powercontext`` is put on PATH the way ``pipx install -e`` does (a launcher in a bin
directory): the committed entry now runs too, stands down, and the prompt is recalled once, not twice. Codex's
per-machine hook lives in the user config, so a prompt in another project must not run it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import live_server
from tests.e2e.test_host_clis_opencode_pi import BUDGET_MS
from tests.fake_models import serve_anthropic, serve_openai_responses
from tests.fake_models.base import FakeModelServer, ModelRequest, json_answer, serve
from tests.fake_models.openai_chat import json_body, sse_body
from tests.hosts_e2e.pinned import pinned_cli
from tests.hosts_e2e.support import Sandbox, claude_sandbox, host_cli, make_sandbox
from tests.hosts_e2e.test_codex import write_provider
from tests.support import Api, unique

VENV_POWERCONTEXT = Path(sys.executable).parent / "powercontext"


@contextmanager
def serve_openai_chat_model() -> Iterator[FakeModelServer]:
    """OpenAI Chat Completions (what WorkBuddy's engine calls), in this process, logging every request."""

    def respond(request: ModelRequest) -> tuple[int, str, list[bytes]]:
        path = request.path.split("?")[0].rstrip("/")
        if request.method == "POST" and path.endswith("/chat/completions"):
            if isinstance(request.body, dict) and request.body.get("stream"):
                return 200, "text/event-stream", [sse_body()]
            return 200, "application/json", [json_body()]
        return json_answer(404, {})

    with serve(respond) as fake:
        yield fake


def readme_install(box: Sandbox, host: str, scope_id: str, url: str) -> subprocess.CompletedProcess[str]:
    assert shutil.which("powercontext", path=box.env["PATH"]) is None, "the README's install puts nothing on PATH"
    done = box.powercontext("hosts", "install", host, "--scope", scope_id, "--url", url, "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def put_on_path(box: Sandbox) -> None:
    """What ``pipx install -e <clone>`` leaves: a ``powercontext`` launcher in a directory on PATH."""
    bin_dir = box.home / ".local" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    (bin_dir / "powercontext").symlink_to(VENV_POWERCONTEXT)
    box.env["PATH"] = os.pathsep.join([str(bin_dir), box.env["PATH"]])


def marker_count(model: FakeModelServer, marker: str, since: int) -> int:
    """How often the marker appears in the last model request that carries it (one injection: a fixed count)."""
    carrying = [r.raw for r in model.model_requests()[since:] if marker in r.raw]
    assert carrying, "the prepared context never reached the model"
    return carrying[-1].count(marker)


def seeded_scope(api: Api, prefix: str, marker: str) -> str:
    scope_id = api.new_scope(prefix=prefix)
    api.add(scope_id, f"Release trains leave on Thursdays; code word {marker}", kind="fact")
    assert api.prepare(scope_id, "warm up").status_code == 200  # the first prepare loads models
    return scope_id


@pytest.mark.timed
def test_claude_code_runs_the_hook_after_the_readme_install(tmp_path: Path) -> None:
    claude = host_cli("claude")
    marker = unique("okapi-marker")
    args = [claude, "-p", "When do release trains leave?", "--output-format", "stream-json", "--verbose"]
    with serve_anthropic("FAKE-CLAUDE-ANSWER") as model:
        box = claude_sandbox(tmp_path, model.base_url, on_path=False)
        (tmp_path / "server-data").mkdir()
        with live_server(tmp_path / "server-data") as server:
            api = Api(server.base_url)
            installed = readme_install(box, "claude-code", seeded_scope(api, "cc-readme", marker), server.base_url)
            assert "the claude-code hook runs" in installed.stderr
            committed = (box.project / ".claude" / "settings.json").read_text()
            assert sys.executable not in committed and "powercontext hook claude-code" in committed
            assert sys.executable in (box.project / ".claude" / "settings.local.json").read_text()

            done, _ = box.run(args)
            assert done.returncode == 0, done.stderr[-2000:]
            once = marker_count(model, marker, 0)
            assert box.last_hook_outcome()["outcome"] == "injected"

            put_on_path(box)
            before = len(model.model_requests())
            done, _ = box.run(args)
            assert done.returncode == 0, done.stderr[-2000:]
            assert marker_count(model, marker, before) == once, "both entries injected: the hook ran twice"
            doctor = box.powercontext("hosts", "doctor", "--host", "claude-code")
            assert "✔ claude-code-hook-command" in doctor.stdout, doctor.stdout
            api.close()


@pytest.mark.timed
def test_codex_runs_the_hook_after_the_readme_install_and_only_in_that_project(tmp_path: Path) -> None:
    codex = host_cli("codex")
    marker = unique("okapi-marker")
    with serve_openai_responses("FAKE-CODEX-ANSWER") as model:
        box = make_sandbox(tmp_path, on_path=False)
        write_provider(box, model.base_url)
        other = tmp_path / "other"
        subprocess.run(["git", "init", "-q", str(other)], check=True)
        (tmp_path / "server-data").mkdir()
        with live_server(tmp_path / "server-data") as server:
            api = Api(server.base_url)
            readme_install(box, "codex", seeded_scope(api, "codex-readme", marker), server.base_url)
            assert sys.executable not in (box.project / ".codex" / "hooks.json").read_text()
            assert sys.executable in (box.home / ".codex" / "config.toml").read_text()

            done, _ = box.run([codex, "exec", "When do release trains leave?"])
            assert done.returncode == 0, done.stderr[-3000:]
            once = marker_count(model, marker, 0)
            outcome = box.last_hook_outcome()
            assert outcome["outcome"] == "injected"

            put_on_path(box)  # the committed hook is not trusted on this machine: still one injection
            before = len(model.model_requests())
            done, _ = box.run([codex, "exec", "When do release trains leave?"])
            assert done.returncode == 0, done.stderr[-3000:]
            assert marker_count(model, marker, before) == once, "both entries injected: the hook ran twice"

            before = len(model.model_requests())
            stamp = box.last_hook_outcome()["time"]
            elsewhere = subprocess.run(
                [codex, "exec", "When do release trains leave?"],
                cwd=other,
                env=box.env,
                capture_output=True,
                text=True,
                timeout=180,
                stdin=subprocess.DEVNULL,
            )
            assert elsewhere.returncode == 0, elsewhere.stderr[-3000:]
            assert not any(marker in r.raw for r in model.model_requests()[before:])
            assert box.last_hook_outcome()["time"] == stamp, "the hook ran in a project it was not installed in"
            api.close()


def test_workbuddy_runs_the_hook_after_the_readme_install(tmp_path: Path) -> None:
    engine = pinned_cli("workbuddy")
    marker = unique("okapi").replace("-", "")
    with serve_openai_chat_model() as model:
        box = make_sandbox(tmp_path, on_path=False, POWERCONTEXT_HOOK_TIMEOUT_MS=str(BUDGET_MS))
        config = box.home / ".codebuddy"
        config.mkdir()
        entry = {
            "id": "fake-model",
            "name": "Fake",
            "vendor": "OpenAI",
            "url": f"{model.base_url}/v1/chat/completions",
            "apiKey": "sk-fake",
            "supportsToolCall": True,
            "maxInputTokens": 100000,
            "maxOutputTokens": 4000,
        }
        (config / "models.json").write_text(json.dumps({"models": [entry]}), encoding="utf-8")
        box.env.update(CODEBUDDY_CONFIG_DIR=str(config), CODEBUDDY_API_KEY="sk-fake")
        args = ["node", str(engine), "-p", "--model", "fake-model", "-y", "When do release trains leave?"]
        (tmp_path / "server-data").mkdir()
        with live_server(tmp_path / "server-data") as server:
            api = Api(server.base_url)
            readme_install(box, "workbuddy", seeded_scope(api, "wb-readme", marker), server.base_url)
            assert sys.executable not in (box.project / ".codebuddy" / "settings.json").read_text()
            assert sys.executable in (box.project / ".codebuddy" / "settings.local.json").read_text()

            done, _ = box.run(args)
            assert done.returncode == 0, done.stdout + done.stderr
            once = marker_count(model, marker, 0)

            put_on_path(box)
            before = len(model.model_requests())
            done, _ = box.run(args)
            assert done.returncode == 0, done.stdout + done.stderr
            assert marker_count(model, marker, before) == once, "both entries injected: the hook ran twice"
            api.close()
