"""Capture from a real Codex session (the pinned CLI) against a fake Responses API: the user's prompt becomes a
``prompt`` Source (UserPromptSubmit) and Codex's final answer a ``reply`` Source (its ``Stop`` hook, which hands
the hook ``last_assistant_message``); the ``remember:`` line becomes an Atomic Memory with that lineage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import live_server
from tests.fake_models import serve_openai_responses
from tests.hosts_e2e.support import host_cli, make_sandbox
from tests.hosts_e2e.test_codex import codex_args, write_provider
from tests.support import Api, wait_until

ANSWER = "FAKE-CODEX-ANSWER-ABOUT-DEPLOYS"


@pytest.mark.timed
def test_codex_prompt_and_final_answer_are_captured(tmp_path: Path) -> None:
    codex = host_cli("codex")
    with serve_openai_responses(ANSWER) as model:
        box = make_sandbox(tmp_path)
        write_provider(box, model.base_url)
        (tmp_path / "server-data").mkdir()
        with live_server(tmp_path / "server-data") as server:
            api = Api(server.base_url)
            scope_id = api.new_scope(prefix="codex-capture")
            installed = box.powercontext(
                "hosts", "install", "codex", "--scope", scope_id, "--url", server.base_url, "--yes"
            )
            assert installed.returncode == 0, installed.stdout + installed.stderr
            done, _ = box.run(codex_args(codex, "remember: deploys are on Tuesdays"))
            assert done.returncode == 0 and ANSWER in done.stdout, done.stderr[-3000:]

            def sources() -> list[dict[str, Any]]:
                return list(api.get(f"/v1/scopes/{scope_id}/sources").json()["items"])

            assert wait_until(lambda: len(sources()) == 2, timeout=20), sources()
            reply, prompt = sources()
            assert (prompt["kind"], reply["kind"]) == ("prompt", "reply")
            assert {prompt["origin"]["host"], reply["origin"]["host"]} == {"codex"}
            assert ANSWER in api.get(f"/v1/scopes/{scope_id}/sources/{reply['source_id']}").json()["content"]

            def extraction() -> dict[str, Any]:
                return dict(api.get(f"/v1/scopes/{scope_id}/sources/{prompt['source_id']}").json()["extraction"])

            assert wait_until(lambda: extraction()["status"] == "done", timeout=20), extraction()
            (address,) = extraction()["writes"]
            memory = api.read_address(address)
            assert memory["text"] == "deploys are on Tuesdays"
            assert [r["source_id"] for r in memory["source_refs"]] == [prompt["source_id"]]
            doctor = box.powercontext("hosts", "doctor", "--host", "codex")
            assert doctor.returncode == 0, doctor.stdout + doctor.stderr
            api.close()
