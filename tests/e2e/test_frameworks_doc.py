"""docs/frameworks.md runs as written (issue 41, item 8): its set-up commands, then each framework's example,
against a Server of its own (the examples name the Scope ``team:atlas``) and, for the agent, a fake
OpenAI-compatible model server on loopback reached through the standard ``OPENAI_BASE_URL``."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chat_fixture import start_chat_server
from tests.conftest import LiveServer, live_server
from tests.frameworks import framework

DOC = Path(__file__).resolve().parents[2] / "docs" / "frameworks.md"
SCRIPT = Path(sys.executable).parent / "powercontext"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


@pytest.fixture(scope="module")
def atlas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    with live_server(tmp_path_factory.mktemp("frameworks-doc")) as live:
        env = {**os.environ, "POWERCONTEXT_URL": live.base_url}
        env.pop("POWERCONTEXT_TOKEN", None)
        for line in blocks("bash")[0].splitlines():
            if line.startswith("powercontext ") and not line.startswith("powercontext server"):
                args = shlex.split(line)[1:]
                subprocess.run([str(SCRIPT), *args], env=env, check=True, capture_output=True, timeout=60)
        yield live


def run_example(code: str, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def example_for(module: str) -> str:
    [code] = [block for block in blocks("python") if f"powercontext.adapters.{module}" in block]
    return code


def test_the_langchain_example(atlas: LiveServer) -> None:
    framework("langchain_core", "langchain-core")
    out = run_example(example_for("langchain"), {**os.environ, "POWERCONTEXT_URL": atlas.base_url})
    assert re.match(r"team:atlas/atomic-memory/am_\w+@1 -> The settlement batch runs nightly at 02:00 UTC\n$", out)


def test_the_llama_index_example(atlas: LiveServer) -> None:
    framework("llama_index.core", "llama-index-core")
    out = run_example(example_for("llama_index"), {**os.environ, "POWERCONTEXT_URL": atlas.base_url})
    assert re.match(r"team:atlas/atomic-memory/am_\w+@1 -> The settlement batch runs nightly at 02:00 UTC\n$", out)


def test_the_openai_agents_example(atlas: LiveServer) -> None:
    framework("agents", "openai-agents")
    with start_chat_server() as chat:
        chat.control(default={"mode": "answer", "content": "Nightly, at 02:00 UTC."})
        env = {
            **os.environ,
            "POWERCONTEXT_URL": atlas.base_url,
            "OPENAI_BASE_URL": chat.base_url,
            "OPENAI_API_KEY": "not-a-real-key",
            "OPENAI_AGENTS_DISABLE_TRACING": "1",  # the SDK would otherwise export traces to its vendor
        }
        out = run_example(example_for("openai_agents"), env)
        [body] = chat.bodies()
    assert out == "Nightly, at 02:00 UTC.\n"
    system = body["messages"][0]
    assert system["role"] == "system" and "The settlement batch runs nightly at 02:00 UTC" in system["content"]


def test_the_langgraph_example(atlas: LiveServer) -> None:
    framework("langgraph.store.base", "langgraph")
    out = run_example(example_for("langgraph"), {**os.environ, "POWERCONTEXT_URL": atlas.base_url})
    assert out == "lunch -> Alice is vegetarian\n"
