"""Codex (the pinned npm CLI) with PowerContext installed the documented way, against a fake Responses API.

Codex ignores a project's ``.codex/`` until the project is trusted and a hook until its hash is trusted;
``hosts install codex --yes`` records both, so the very next ``codex exec`` injects context. Then the
Server stopped (exit 0, an answer, one notice for the user and none for the model) and hung (the hook
gives up within its budget).
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import live_server
from tests.fake_models import serve_openai_responses
from tests.hosts_e2e.support import HOOK_BUDGET_MS, Sandbox, host_cli, hung_server, make_sandbox
from tests.support import Api, unique

ANSWER = "FAKE-CODEX-ANSWER"


def write_provider(box: Sandbox, model_url: str) -> None:
    """Codex's documented custom provider, pointing at the fake model (loopback only)."""
    config = box.home / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "\n".join(
            [
                'model = "fake-model"',
                'model_provider = "fake"',
                "[model_providers.fake]",
                'name = "fake"',
                f'base_url = "{model_url}/v1"',
                'wire_api = "responses"',
                "request_max_retries = 0",
                "stream_max_retries = 0",
                "",
            ]
        ),
        encoding="utf-8",
    )


def codex_args(codex: str, prompt: str) -> list[str]:
    return [codex, "exec", prompt]


@pytest.mark.timed
def test_codex_receives_context_and_survives_a_down_or_hung_server(tmp_path: Path) -> None:
    codex = host_cli("codex")
    marker = unique("heron-marker")
    with serve_openai_responses(ANSWER) as model:
        box = make_sandbox(tmp_path)
        write_provider(box, model.base_url)
        (tmp_path / "server-data").mkdir()
        with live_server(tmp_path / "server-data") as server:
            api = Api(server.base_url)
            scope_id = api.new_scope(prefix="codex-e2e")
            api.add(scope_id, f"Hotfixes need two approvals; code word {marker}", kind="constraint")
            assert api.prepare(scope_id, "warm up").status_code == 200  # first prepare loads models
            installed = box.powercontext(
                "hosts", "install", "codex", "--scope", scope_id, "--url", server.base_url, "--yes"
            )
            assert installed.returncode == 0, installed.stdout + installed.stderr
            done, _ = box.run(codex_args(codex, "How many approvals does a hotfix need?"))
            assert done.returncode == 0, done.stderr[-3000:]
            assert ANSWER in done.stdout
            assert model.saw(marker), "the prepared context never reached the model"
            doctor = box.powercontext("hosts", "doctor", "--host", "codex")
            assert doctor.returncode == 0, doctor.stdout + doctor.stderr
            api.close()
        port = urlsplit(server.base_url).port
        assert port is not None

        before = len(model.model_requests())
        done, down_s = box.run(codex_args(codex, "How many approvals does a hotfix need?"))
        assert done.returncode == 0, done.stderr[-3000:]
        assert ANSWER in done.stdout
        # The notice went out as `systemMessage` (for the user); Codex accepted the output and kept it out of
        # the model's context. `codex exec` 0.169 prints no hook messages, so it cannot be seen here.
        assert "hook: UserPromptSubmit Completed" in done.stderr, done.stderr[-2000:]
        assert list((box.home / ".local" / "state" / "powercontext" / "notices").iterdir()), "no notice was emitted"
        assert not any("recall is unavailable" in r.raw for r in model.model_requests()[before:])
        assert box.last_hook_outcome()["outcome"] == "server_unavailable"

        with hung_server(port):
            done, hung_s = box.run(codex_args(codex, "How many approvals does a hotfix need?"))
        assert done.returncode == 0, done.stderr[-3000:]
        assert ANSWER in done.stdout
        outcome = box.last_hook_outcome()
        assert (outcome["outcome"], outcome["reason"]) == ("server_unavailable", "timeout")
        assert float(str(outcome["duration_ms"])) <= HOOK_BUDGET_MS + 500
        # The whole run never waits for the host's own 10 s hook timeout (generous: a loaded machine is slow).
        assert hung_s - down_s < 8.0
        print(json.dumps({"down_s": round(down_s, 2), "hung_s": round(hung_s, 2)}))
