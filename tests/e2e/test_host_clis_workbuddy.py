"""WorkBuddy's engine, CodeBuddy Code (pinned, from npm ``@tencent-ai/agent-sdk``), against a fake model on loopback.

In a throwaway HOME and a fresh git project: ``powercontext hosts install workbuddy --scope S``, then one
non-interactive prompt (``codebuddy-headless.js -p``). With the real Server up, the memory's unique marker
reaches the logged model request; with the Server stopped the host still answers and exits 0; with a Server
that accepts and never answers, the hook hangs up within the hook budget (+ 0.5 s) and the prompt goes on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import LiveServer
from tests.e2e import test_host_clis_opencode_pi as shared
from tests.e2e.test_host_clis_opencode_pi import (
    BUDGET_MS,
    HOST_TIMEOUT_S,
    QUESTION,
    FakeModel,
    HungServer,
    assert_answered,
    assert_gave_up_within_budget,
    assert_reply_captured,
    fresh_project,
    install,
    seed_marker,
)
from tests.hosts_e2e.pinned import pinned_cli
from tests.support import Api, free_port

# The fake model (module-wide) and the hung Server, as the OpenCode and Pi tests use them.
fake_model = shared.fake_model
hung_server = shared.hung_server


def workbuddy_env(home: Path, model: FakeModel, powercontext_url: str) -> dict[str, str]:
    """A throwaway HOME with the user's own engine config: one custom model, the fake one."""
    config = home / ".codebuddy"
    config.mkdir(parents=True)
    model_entry = {
        "id": "fake-model",
        "name": "Fake",
        "vendor": "OpenAI",
        "url": f"{model.url}/chat/completions",
        "apiKey": "sk-fake",
        "supportsToolCall": True,
        "maxInputTokens": 100000,
        "maxOutputTokens": 4000,
    }
    (config / "models.json").write_text(json.dumps({"models": [model_entry]}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERCONTEXT_", "CODEBUDDY", "WORKBUDDY", "XDG_"))}
    env.update(
        HOME=str(home),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        POWERCONTEXT_URL=powercontext_url,
        POWERCONTEXT_HOOK_TIMEOUT_MS=str(BUDGET_MS),
        CODEBUDDY_CONFIG_DIR=str(config),
        CODEBUDDY_API_KEY="sk-fake",
    )
    return env


def prompt(
    tmp_path: Path, model: FakeModel, url: str, scope_id: str
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    engine = pinned_cli("workbuddy")
    home = tmp_path / "home"
    home.mkdir()
    project = fresh_project(tmp_path)
    env = workbuddy_env(home, model, url)
    install("workbuddy", project, scope_id, env)
    before = len(model.requests())
    done = subprocess.run(
        ["node", str(engine), "-p", "--model", "fake-model", "-y", QUESTION],
        cwd=str(project),
        env=env,
        capture_output=True,
        text=True,
        timeout=HOST_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    return done, model.requests()[before:]


def carrying_question(requests: list[dict[str, Any]]) -> list[str]:
    texts = [json.dumps(r["body"], ensure_ascii=False) for r in requests]
    return [t for t in texts if QUESTION in t]


def test_context_reaches_the_model(tmp_path: Path, server: LiveServer, api: Api, fake_model: FakeModel) -> None:
    scope_id, marker = seed_marker(api, "workbuddy")
    done, requests = prompt(tmp_path, fake_model, server.base_url, scope_id)
    assert_answered(done)
    carrying = carrying_question(requests)
    assert carrying and all(marker in text for text in carrying), "the prepared context reached the model"



def test_the_final_answer_is_captured_as_a_reply_source(
    tmp_path: Path, server: LiveServer, api: Api, fake_model: FakeModel
) -> None:
    scope_id, _ = seed_marker(api, "workbuddy")
    done, _ = prompt(tmp_path, fake_model, server.base_url, scope_id)
    assert_answered(done)
    assert_reply_captured(api, scope_id, "workbuddy")


def test_server_down_still_answers(tmp_path: Path, fake_model: FakeModel) -> None:
    done, requests = prompt(tmp_path, fake_model, f"http://127.0.0.1:{free_port()}", "project:down")
    assert_answered(done)
    assert carrying_question(requests)


def test_hung_server_costs_at_most_the_hook_budget(
    tmp_path: Path, fake_model: FakeModel, hung_server: HungServer
) -> None:
    done, requests = prompt(tmp_path, fake_model, hung_server.url, "project:hung")
    assert_answered(done)
    assert_gave_up_within_budget(hung_server, requests)
