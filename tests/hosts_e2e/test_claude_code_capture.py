"""Capture from a real Claude Code session (the pinned CLI) against a fake model, with the Server up.

The user's ``remember: …`` prompt becomes a ``prompt`` Source (the UserPromptSubmit hook) and, extracted by the
Server's worker, an Atomic Memory whose lineage names that Source; the agent's final answer becomes a ``reply``
Source (the Stop hook); the next prompt's prepared context carries the memory to the model; and with
``POWERCONTEXT_CAPTURE=off`` nothing is captured.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import live_server
from tests.fake_models import serve_anthropic
from tests.hosts_e2e.support import claude_sandbox, host_cli
from tests.support import Api, wait_until

ANSWER = "FAKE-CLAUDE-ANSWER-ABOUT-DEPLOYS"


def claude_args(claude: str, prompt: str) -> list[str]:
    return [claude, "-p", prompt, "--output-format", "stream-json", "--verbose"]


def _sources(api: Api, scope_id: str) -> list[dict[str, Any]]:
    r = api.get(f"/v1/scopes/{scope_id}/sources?limit=50")
    assert r.status_code == 200, r.text
    return list(r.json()["items"])


@pytest.mark.timed
def test_a_remembered_prompt_and_the_answer_are_captured_and_recalled_next_turn(tmp_path: Path) -> None:
    claude = host_cli("claude")
    with serve_anthropic(ANSWER) as model:
        box = claude_sandbox(tmp_path, model.base_url)
        (tmp_path / "server-data").mkdir()
        with live_server(tmp_path / "server-data") as server:
            api = Api(server.base_url)
            scope_id = api.new_scope(prefix="cc-capture")
            assert api.prepare(scope_id, "warm up").status_code == 200
            installed = box.powercontext(
                "hosts", "install", "claude-code", "--scope", scope_id, "--url", server.base_url, "--yes"
            )
            assert installed.returncode == 0, installed.stdout + installed.stderr
            done, _ = box.run(claude_args(claude, "remember: deploys are on Tuesdays"))
            assert done.returncode == 0 and ANSWER in done.stdout, done.stderr[-2000:]

            assert wait_until(lambda: len(_sources(api, scope_id)) == 2, timeout=20), _sources(api, scope_id)
            reply, prompt = _sources(api, scope_id)  # newest first: the Stop hook ran after the prompt's
            assert (prompt["kind"], reply["kind"]) == ("prompt", "reply")
            assert prompt["origin"]["host"] == "claude-code" and prompt["origin"]["session_id"]
            assert reply["origin"]["session_id"] == prompt["origin"]["session_id"]
            assert ANSWER in api.get(f"/v1/scopes/{scope_id}/sources/{reply['source_id']}").json()["content"]

            def extracted() -> dict[str, Any]:
                return dict(api.get(f"/v1/scopes/{scope_id}/sources/{prompt['source_id']}").json())

            assert wait_until(lambda: extracted()["extraction"]["status"] == "done", timeout=20), extracted()
            (address,) = extracted()["extraction"]["writes"]
            memory = api.read_address(address)
            assert memory["text"] == "deploys are on Tuesdays"
            assert [ref["source_id"] for ref in memory["source_refs"]] == [prompt["source_id"]]

            before = len(model.model_requests())
            done, _ = box.run(claude_args(claude, "when are deploys?"))
            assert done.returncode == 0, done.stderr[-2000:]
            assert any("deploys are on Tuesdays" in r.raw for r in model.model_requests()[before:]), (
                "the captured memory never reached the model on the next prompt"
            )
            assert box.last_hook_outcome()["outcome"] == "injected"
            assert wait_until(lambda: len(_sources(api, scope_id)) == 4, timeout=20)

            quiet = dataclasses.replace(box, env={**box.env, "POWERCONTEXT_CAPTURE": "off"})
            done, _ = quiet.run(claude_args(claude, "remember: this one stays private"))
            assert done.returncode == 0, done.stderr[-2000:]
            assert len(_sources(api, scope_id)) == 4
            api.close()
