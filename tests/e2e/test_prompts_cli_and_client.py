"""``powercontext prompt …`` run as a user runs it, and the async client's Prompt methods, against the live
server subprocess."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest

from powercontext.client import PowerContextClient, PowerContextError
from powercontext.contract.prompts import PromptDemonstration
from tests.conftest import LiveServer
from tests.e2e.test_cli import run_cli

MARKER = "cli-prompt-marker-5521"


@pytest.fixture
def scope(server: LiveServer) -> str:
    scope_id = f"cli-prompt-{uuid.uuid4().hex[:12]}"
    assert run_cli("scope", "create", scope_id, url=server.base_url).returncode == 0
    return scope_id


def test_prompt_set_show_auto_and_retire_through_the_cli(server: LiveServer, scope: str, tmp_path: Path) -> None:
    url = server.base_url
    assert "prompt" in run_cli("--help").stdout
    before = json.loads(run_cli("prompt", "show", "recall.expand", "-s", scope, "--json", url=url).stdout)
    assert before["selection"] == "built_in"

    demos = tmp_path / "demos.json"
    demos.write_text(
        json.dumps([{"input": {"request": "how do we ship?"}, "expected_output": {"queries": ["deploy", "release"]}}]),
        encoding="utf-8",
    )
    instructions = tmp_path / "instructions.md"
    instructions.write_text(f"{MARKER}: name the services involved.\n", encoding="utf-8")
    result = run_cli(
        "prompt", "set", "recall.expand", "-s", scope,
        "--instructions-file", str(instructions), "--demonstrations-file", str(demos), url=url,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "custom, revision 1" in result.stdout and "1 demonstrations" in result.stdout

    shown = run_cli("prompt", "show", "recall.expand", "-s", scope, "--text", url=url)
    assert shown.returncode == 0, shown.stderr
    assert f"{MARKER}: name the services involved.\n\nExamples:" in shown.stdout
    assert 'Output: {"queries":["deploy","release"]}' in shown.stdout
    custom = json.loads(run_cli("prompt", "show", "recall.expand", "-s", scope, "--json", url=url).stdout)
    assert custom["compiled_digest"] != before["compiled_digest"]

    stale = run_cli(
        "prompt", "set", "recall.expand", "-s", scope, "--instructions", "x", "--expected-revision", "0", url=url
    )
    assert stale.returncode == 4 and "revision-conflict" in stale.stderr
    blank = run_cli("prompt", "set", "recall.expand", "-s", scope, "--instructions", "   ", url=url)
    assert blank.returncode == 2 and "prompt-instructions-required" in blank.stderr
    unknown = run_cli("prompt", "show", "memory.summarize", "-s", scope, url=url)
    assert unknown.returncode == 3 and "unknown-prompt-key" in unknown.stderr

    auto = run_cli("prompt", "auto", "recall.expand", "-s", scope, "--json", url=url)
    assert auto.returncode == 0, auto.stderr
    back = json.loads(auto.stdout)
    assert (back["selection"], back["head_revision"]) == ("built_in", 2)
    assert back["compiled_digest"] == before["compiled_digest"]

    listed = run_cli("prompt", "list", "-s", scope, url=url)
    assert listed.returncode == 0, listed.stderr
    lines = dict(line.split("\t", 1) for line in listed.stdout.splitlines())
    assert (
        lines["recall.expand"].startswith("built_in\t") and "head revision 2 (auto, active)" in lines["recall.expand"]
    )
    assert lines["memory.rerank"].endswith("no Artifact")

    retired = run_cli("prompt", "retire", "recall.expand", "-s", scope, "--expected-revision", "2", url=url)
    assert retired.returncode == 0, retired.stderr
    assert "revision 2 is retired" in retired.stdout
    bad_file = tmp_path / "bad.json"
    bad_file.write_text('{"input": 1}', encoding="utf-8")
    refused = run_cli(
        "prompt", "set", "recall.expand", "-s", scope, "--instructions", "x", "--demonstrations-file", str(bad_file),
        url=url,
    )  # fmt: skip
    assert refused.returncode == 1 and "JSON array" in refused.stderr


def test_the_client_covers_every_prompt_operation(server: LiveServer) -> None:
    async def flow() -> None:
        scope_id = f"client-prompt-{uuid.uuid4().hex[:12]}"
        async with PowerContextClient(server.base_url) as client:
            await client.create_scope(scope_id, "prompts")
            caps = await client.capabilities()
            assert set(caps.prompts) == {"memory.rerank", "recall.expand", "memory.extract"}
            builtin = await client.get_prompt(scope_id, "memory.rerank")
            demo = PromptDemonstration(
                input={"request": "q", "candidates": ["a", "b"]}, expected_output={"ranks": [2, 1]}
            )
            custom = await client.set_prompt(scope_id, "memory.rerank", MARKER, [demo], expected_revision=0)
            assert (custom.selection, custom.selected_version, custom.demonstration_count) == ("artifact", 1, 1)
            assert custom.compiled_digest != builtin.compiled_digest
            with pytest.raises(PowerContextError) as conflict:
                await client.set_prompt(scope_id, "memory.rerank", "again", expected_revision=0)
            assert (conflict.value.status, conflict.value.code) == (409, "revision-conflict")
            auto = await client.set_prompt_auto(scope_id, "memory.rerank", expected_revision=1)
            assert auto.compiled_digest == builtin.compiled_digest
            retired = await client.retire_prompt(scope_id, "memory.rerank")
            assert retired.head_state == "retired"
            first = await client.get_prompt_artifact(scope_id, "memory.rerank", revision=1)
            assert (first.mode, first.instructions, first.demonstrations) == ("custom", MARKER, [demo])
            head = await client.get_prompt_artifact(scope_id, "memory.rerank")
            assert (head.mode, head.state, head.artifact_address.artifact.revision) == ("auto", "retired", 2)
            statuses = await client.list_prompts(scope_id)
            assert [(s.key, s.status, s.head_revision) for s in statuses] == [
                ("memory.rerank", "built_in", 2),
                ("recall.expand", "built_in", 0),
                ("memory.extract", "built_in", 0),
            ]

    asyncio.run(flow())


@pytest.mark.parametrize("command", ["show", "set", "auto", "retire"])
def test_the_key_help_names_every_registered_prompt(command: str) -> None:
    from powercontext.prompts.definitions import BUILTIN_DEFINITIONS

    shown = run_cli("prompt", command, "--help", url="http://127.0.0.1:9")
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())  # the help wraps where the terminal ends
    assert "A registered Prompt key:" in text
    for key in BUILTIN_DEFINITIONS:
        assert key in text, (command, key)
