"""Hermes Agent (pinned ``hermes-agent`` from PyPI, in its own Python 3.12 venv) against a fake model on loopback.

In a throwaway HOME and a fresh git project: ``powercontext hosts install hermes --scope S --yes``, then one
non-interactive prompt (``hermes chat -Q -q``). With the real Server up, the memory's unique marker reaches
the logged model request; with the Server stopped Hermes still answers and exits 0; with a Server that accepts
and never answers, the hook hangs up within the hook budget (+ 0.5 s) and the prompt goes on.
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

fake_model = shared.fake_model
hung_server = shared.hung_server


def prompt(
    tmp_path: Path, model: FakeModel, url: str, scope_id: str
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    hermes = pinned_cli("hermes")
    home = tmp_path / "home"
    home.mkdir()
    project = fresh_project(tmp_path)
    hermes_home = home / ".hermes"
    hermes_home.mkdir()
    # The user's own Hermes config: one custom provider, the fake model (install appends its enabling block).
    (hermes_home / "config.yaml").write_text(
        "model:\n  default: fake-model\n  provider: custom\n"
        f"  base_url: {model.url}\n  api_key: sk-fake\n  context_length: 128000\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERCONTEXT_", "HERMES_", "XDG_"))}
    env.update(
        HOME=str(home),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        POWERCONTEXT_URL=url,
        POWERCONTEXT_HOOK_TIMEOUT_MS=str(BUDGET_MS),
        HERMES_HOME=str(hermes_home),
    )
    install("hermes", project, scope_id, env)
    before = len(model.requests())
    done = subprocess.run(
        [str(hermes), "chat", "-Q", "-q", QUESTION],
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
    scope_id, marker = seed_marker(api, "hermes")
    done, requests = prompt(tmp_path, fake_model, server.base_url, scope_id)
    assert_answered(done)
    carrying = carrying_question(requests)
    assert carrying and all(marker in text for text in carrying), "the prepared context reached the model"



def test_the_final_answer_is_captured_as_a_reply_source(
    tmp_path: Path, server: LiveServer, api: Api, fake_model: FakeModel
) -> None:
    scope_id, _ = seed_marker(api, "hermes")
    done, _ = prompt(tmp_path, fake_model, server.base_url, scope_id)
    assert_answered(done)
    assert_reply_captured(api, scope_id, "hermes")


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
