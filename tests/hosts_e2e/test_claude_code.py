"""Claude Code (the pinned npm CLI) with PowerContext installed the documented way, against a fake model.

One flow per test: Server up (the memory reaches the model, the MCP tools are offered), Server stopped
(exit 0, an answer, one notice for the user and none for the model), Server hung (the hook gives up
within its budget).
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import live_server
from tests.fake_models import serve_anthropic
from tests.hostile_text import (
    BEGIN_WORD,
    END_WORD,
    FORGED_INSTRUCTION,
    HOSTILE_BODIES,
    decoded_items,
    forbidden_found,
    strings_in,
)
from tests.hosts_e2e.support import HOOK_BUDGET_MS, claude_sandbox, host_cli, hung_server
from tests.support import Api, unique

ANSWER = "FAKE-CLAUDE-ANSWER"


def claude_args(claude: str, prompt: str) -> list[str]:
    return [claude, "-p", prompt, "--output-format", "stream-json", "--verbose"]


@pytest.mark.timed
def test_claude_code_receives_context_and_survives_a_down_or_hung_server(tmp_path: Path) -> None:
    claude = host_cli("claude")
    marker = unique("zebra-marker")
    with serve_anthropic(ANSWER) as model:
        box = claude_sandbox(tmp_path, model.base_url)
        (tmp_path / "server-data").mkdir()
        with live_server(tmp_path / "server-data") as server:
            api = Api(server.base_url)
            scope_id = api.new_scope(prefix="cc-e2e")
            api.add(scope_id, f"Release trains leave on Thursdays; code word {marker}", kind="fact")
            assert (
                api.prepare(scope_id, "warm up").status_code == 200
            )  # first prepare loads models: not the hook's cost
            installed = box.powercontext(
                "hosts", "install", "claude-code", "--scope", scope_id, "--url", server.base_url, "--yes"
            )
            assert installed.returncode == 0, installed.stdout + installed.stderr
            done, _ = box.run(claude_args(claude, "When do release trains leave?"))
            assert done.returncode == 0, done.stderr[-2000:]
            assert ANSWER in done.stdout
            assert model.saw(marker), "the prepared context never reached the model"
            # The project MCP server is approved for this workspace (not "Pending approval") and answers.
            listed, _ = box.run([claude, "mcp", "list"])
            assert "powercontext" in listed.stdout and "Connected" in listed.stdout, listed.stdout + listed.stderr
            api.close()
        port = urlsplit(server.base_url).port
        assert port is not None

        before = len(model.model_requests())
        done, down_s = box.run(claude_args(claude, "When do release trains leave?"))
        assert done.returncode == 0, done.stderr[-2000:]
        assert ANSWER in done.stdout
        assert "PowerContext recall is unavailable" in done.stdout, "the user was not told recall is down"
        assert not any("recall is unavailable" in r.raw for r in model.model_requests()[before:])
        assert box.last_hook_outcome()["outcome"] == "server_unavailable"

        with hung_server(port):
            done, hung_s = box.run(claude_args(claude, "When do release trains leave?"))
        assert done.returncode == 0, done.stderr[-2000:]
        assert ANSWER in done.stdout
        outcome = box.last_hook_outcome()
        assert (outcome["outcome"], outcome["reason"]) == ("server_unavailable", "timeout")
        assert float(str(outcome["duration_ms"])) <= HOOK_BUDGET_MS + 500
        # The whole run never waits for the host's own 10 s hook timeout (generous: a loaded machine is slow).
        assert hung_s - down_s < 8.0
        print(json.dumps({"down_s": round(down_s, 2), "hung_s": round(hung_s, 2)}))


@pytest.mark.timed
def test_claude_code_gives_the_model_no_framing_a_memory_forged(tmp_path: Path) -> None:
    """Every hostile body (tests/hostile_text.py) stored, then one real Claude Code turn: what the model reads
    holds exactly one END marker, our part holds no raw tag, separator, bidi or tag character, and the host's
    ``<system-reminder>`` tags stay balanced (a memory closed or opened none)."""
    claude = host_cli("claude")
    with serve_anthropic(ANSWER) as model:
        box = claude_sandbox(tmp_path, model.base_url)
        (tmp_path / "server-data").mkdir()
        with live_server(tmp_path / "server-data") as server:
            api = Api(server.base_url)
            scope_id = api.new_scope(prefix="cc-framing")
            for text in HOSTILE_BODIES.values():
                api.add(scope_id, text, kind="fact")
            assert api.prepare(scope_id, "warm up").status_code == 200
            installed = box.powercontext(
                "hosts", "install", "claude-code", "--scope", scope_id, "--url", server.base_url, "--yes"
            )
            assert installed.returncode == 0, installed.stdout + installed.stderr
            done, _ = box.run(claude_args(claude, "deploy"))
            api.close()
        assert done.returncode == 0, done.stderr[-2000:]
        assert box.last_hook_outcome()["outcome"] == "injected"
    carrying = [s for r in model.model_requests() for s in strings_in(r.body) if BEGIN_WORD in s]
    assert carrying, "the prepared context never reached the model"
    for text in carrying:
        assert text.count(END_WORD) == 1 and text.count(BEGIN_WORD) == 1
        ours = text[text.index(BEGIN_WORD) : text.index(END_WORD)]
        assert forbidden_found(ours) == []
        assert text.count("<system-reminder>") == text.count("</system-reminder>")
        assert f"<system-reminder>{FORGED_INSTRUCTION}" not in text
        assert sorted(item["content"] for item in decoded_items(text)) == sorted(HOSTILE_BODIES.values())
