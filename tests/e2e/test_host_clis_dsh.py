"""DSH (pinned ``@deepseek-ai/dsh`` from npm, on a pinned Node 22 from npm) against a fake model on loopback.

In a throwaway HOME and a fresh git project: ``powercontext hosts install dsh --scope S --yes`` (the project's
opt-in, the user-level plugin and the marked entry of ``$DSH_HOME/cordis.patch.yml`` that loads it), then one
non-interactive prompt (``dsh --profile headless "…"``, model at ``DEEPSEEK_BASE_URL``). With the real Server
up, the memory's unique marker reaches the logged model request; with the Server stopped, or a hook that
prints garbage, DSH still answers and exits 0; with a Server that accepts and never answers, the hook hangs up
within the hook budget (+ 0.5 s) and the prompt goes on.

DSH 0.1.0-rc.8's launcher stops before any prompt without a live-reload service it cannot get from any
published package; the test passes ``--patch`` with ``tests/hosts_e2e/dsh_launcher_shim.mjs`` for that (what
install writes is loaded from the home patch layer, as for a user).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import REPO_ROOT, LiveServer
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
SHIM = REPO_ROOT / "tests" / "hosts_e2e" / "dsh_launcher_shim.mjs"


def prompt(
    tmp_path: Path, model: FakeModel, url: str, scope_id: str, extra_env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    dsh = pinned_cli("dsh")
    node = pinned_cli("node22")
    home = tmp_path / "home"
    home.mkdir()
    project = fresh_project(tmp_path)
    overlay = tmp_path / "launcher-shim.yml"
    overlay.write_text(f"- insert:\n    - id: launcher-hmr-shim\n      name: {json.dumps(str(SHIM))}\n", "utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERCONTEXT_", "DSH_", "DEEPSEEK_", "XDG_"))}
    env.update(
        HOME=str(home),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), str(node.parent), env.get("PATH", "")]),
        POWERCONTEXT_URL=url,
        POWERCONTEXT_HOOK_TIMEOUT_MS=str(BUDGET_MS),
        DSH_HOME=str(home / ".dsh"),
        DSH_TELEMETRY_DISABLED="1",
        DEEPSEEK_BASE_URL=model.url,
        DEEPSEEK_API_KEY="sk-fake",
    )
    install("dsh", project, scope_id, env)
    before = len(model.requests())
    done = subprocess.run(
        [str(node), str(dsh), "--profile", "headless", "--patch", str(overlay), QUESTION],
        cwd=str(project),
        env={**env, **(extra_env or {})},
        capture_output=True,
        text=True,
        timeout=HOST_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    return done, model.requests()[before:]


def agent_requests(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The agent's model requests of the turn (the session-title request quotes the question too, in JSON)."""
    return [r for r in requests if any(m.get("content") == QUESTION for m in r["body"].get("messages", []))]


def carrying_question(requests: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(r["body"], ensure_ascii=False) for r in agent_requests(requests)]


def test_context_reaches_the_model(tmp_path: Path, server: LiveServer, api: Api, fake_model: FakeModel) -> None:
    scope_id, marker = seed_marker(api, "dsh")
    done, requests = prompt(tmp_path, fake_model, server.base_url, scope_id)
    assert_answered(done)
    carrying = carrying_question(requests)
    assert carrying and all(marker in text for text in carrying), "the prepared context reached the model"



def test_the_final_answer_is_captured_as_a_reply_source(
    tmp_path: Path, server: LiveServer, api: Api, fake_model: FakeModel
) -> None:
    scope_id, _ = seed_marker(api, "dsh")
    done, _ = prompt(tmp_path, fake_model, server.base_url, scope_id)
    assert_answered(done)
    assert_reply_captured(api, scope_id, "dsh")


def test_server_down_still_answers(tmp_path: Path, fake_model: FakeModel) -> None:
    done, requests = prompt(tmp_path, fake_model, f"http://127.0.0.1:{free_port()}", "project:down")
    assert_answered(done)
    assert carrying_question(requests)


def test_a_hook_printing_garbage_never_aborts_the_prompt(tmp_path: Path, fake_model: FakeModel) -> None:
    """DSH aborts a prompt whose pre-step listener throws: the plugin must absorb a broken hook."""
    garbage = tmp_path / "garbage-python"
    garbage.write_text("#!/bin/sh\ncat >/dev/null\necho '{not json'\nexit 3\n", encoding="utf-8")
    garbage.chmod(0o755)
    extra = {"POWERCONTEXT_PYTHON": str(garbage)}
    done, requests = prompt(tmp_path, fake_model, f"http://127.0.0.1:{free_port()}", "project:x", extra)
    assert_answered(done)
    assert carrying_question(requests)


def test_hung_server_costs_at_most_the_hook_budget(
    tmp_path: Path, fake_model: FakeModel, hung_server: HungServer
) -> None:
    done, requests = prompt(tmp_path, fake_model, hung_server.url, "project:hung")
    assert_answered(done)
    assert_gave_up_within_budget(hung_server, agent_requests(requests))
