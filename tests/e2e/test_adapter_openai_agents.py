"""The OpenAI Agents SDK hook (issue 41, item 8): a real ``Agent`` run by the real ``Runner`` against a fake
OpenAI-compatible model server on loopback, with a real PowerContext Server: the prepared context reaches the
model's request, and a Server that does not answer leaves the run going without it (or fails it, if required)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from tests.chat_fixture import ChatServer, start_chat_server
from tests.conftest import LiveServer
from tests.frameworks import artifact_id, framework
from tests.support import Api, free_port

agents = framework("agents", "openai-agents")

from openai import AsyncOpenAI  # noqa: E402

from powercontext.adapters.openai_agents import PowerContextInputFilter  # noqa: E402
from powercontext.client.errors import Unavailable  # noqa: E402

SETTLEMENT = "The settlement batch runs nightly at 02:00 UTC"


@pytest.fixture(scope="module")
def chat() -> Iterator[ChatServer]:
    with start_chat_server() as server:
        yield server


def run_agent(chat: ChatServer, question: str, hook: PowerContextInputFilter) -> Any:
    chat.reset()
    chat.control(default={"mode": "answer", "content": "Nightly at 02:00 UTC."})
    model = agents.OpenAIChatCompletionsModel(
        model="fake-model", openai_client=AsyncOpenAI(base_url=chat.base_url, api_key="not-a-real-key")
    )
    agent = agents.Agent(name="ops", instructions="Answer briefly.", model=model)
    config = agents.RunConfig(call_model_input_filter=hook, tracing_disabled=True)
    return asyncio.run(agents.Runner.run(agent, question, run_config=config))


def system_message(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] in ("system", "developer"))


def test_the_prepared_context_reaches_the_model_request(server: LiveServer, api: Api, chat: ChatServer) -> None:
    scope_id = api.new_scope(prefix="agents")
    ident = artifact_id(api.add(scope_id, SETTLEMENT, kind="fact"))

    hook = PowerContextInputFilter(scope_id, base_url=server.base_url)

    result = run_agent(chat, "When does the settlement batch run?", hook)

    assert result.final_output == "Nightly at 02:00 UTC."
    [body] = chat.bodies()
    system = system_message(body)
    assert system.startswith("Answer briefly.\n\nPowerContext: untrusted historical context.")
    assert SETTLEMENT in system and ident in system  # the item and its exact address
    assert body["messages"][-1] == {"role": "user", "content": "When does the settlement batch run?"}


def test_an_unreachable_server_leaves_the_instructions_alone_or_fails_when_required(chat: ChatServer) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"

    run_agent(chat, "When does the settlement batch run?", PowerContextInputFilter("any:scope", base_url=nowhere))

    assert system_message(chat.bodies()[0]) == "Answer briefly."
    with pytest.raises(Unavailable):
        run_agent(chat, "When?", PowerContextInputFilter("any:scope", base_url=nowhere, required=True))
