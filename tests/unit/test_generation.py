"""The chat-completions provider against the fake chat server (a real process over loopback), and its settings."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from powercontext.inference.errors import InferenceTimeout, InferenceUnavailable
from powercontext.inference.generation import ChatMessage, NoGeneration, OpenAICompatibleGeneration
from powercontext.inference.generation_config import (
    GenerationConfigError,
    InferenceSettings,
    build_generation_provider,
)
from tests.chat_fixture import ChatServer, start_chat_server

API_KEY = "sk-chat-do-not-leak-7781"
MESSAGES = [ChatMessage("system", "rank things"), ChatMessage("user", "Request: x\n\nCandidates:\n[1] a\n[2] b")]


@pytest.fixture(scope="module")
def fake() -> Iterator[ChatServer]:
    with start_chat_server() as server:
        yield server


@pytest.fixture
def chat(fake: ChatServer) -> Iterator[ChatServer]:
    fake.reset()
    yield fake


@pytest.fixture
def provider(chat: ChatServer) -> Iterator[OpenAICompatibleGeneration]:
    p = OpenAICompatibleGeneration(chat.base_url, api_key=API_KEY)
    yield p
    p.close()


def test_answer_and_request_shape(chat: ChatServer, provider: OpenAICompatibleGeneration) -> None:
    chat.control(script=[{"mode": "answer", "content": '{"ranks": [2]}'}])
    text = provider.complete("m1", MESSAGES, {"temperature": 0.0, "max_output_tokens": 64, "candidate_limit": 30}, 5)
    assert text == '{"ranks": [2]}'
    (body,) = chat.bodies()
    assert body["model"] == "m1"
    assert body["temperature"] == 0.0 and body["max_tokens"] == 64
    assert "candidate_limit" not in body  # ours, not the model's
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


@pytest.mark.parametrize("mode", ["error", "garbage"])
def test_server_failures_are_unavailable_and_content_free(
    chat: ChatServer, provider: OpenAICompatibleGeneration, mode: str
) -> None:
    chat.control(script=[{"mode": mode}])
    with pytest.raises(InferenceUnavailable) as caught:
        provider.complete("m1", MESSAGES, {}, 5)
    message = str(caught.value)
    assert chat.origin not in message and "127.0.0.1" not in message and API_KEY not in message
    assert "<html>" not in message and caught.value.__cause__ is None


def test_an_answer_over_1_mib_is_unavailable_and_the_next_call_still_works(
    chat: ChatServer, provider: OpenAICompatibleGeneration
) -> None:
    chat.control(script=[{"mode": "answer", "content": "x" * (1 << 20)}, {"mode": "answer", "content": "ok"}])
    with pytest.raises(InferenceUnavailable, match="more than 1 MiB"):
        provider.complete("m1", MESSAGES, {}, 5)
    # The oversized answer's connection is dropped, not handed to the next call half read.
    assert provider.complete("m1", MESSAGES, {}, 5) == "ok"
    assert len(chat.bodies()) == 2


def test_refused_connection_is_unavailable() -> None:
    from tests.support import free_port

    p = OpenAICompatibleGeneration(f"http://127.0.0.1:{free_port()}/v1")
    try:
        with pytest.raises(InferenceUnavailable):
            p.complete("m", MESSAGES, {}, 2)
    finally:
        p.close()


@pytest.mark.parametrize("step", [{"mode": "stall", "delay_s": 3.0}, {"mode": "trickle", "delay_s": 0.05}])
@pytest.mark.timed
def test_the_timeout_is_a_total_deadline(
    chat: ChatServer, provider: OpenAICompatibleGeneration, step: dict[str, object]
) -> None:
    """A stalled answer and a body trickled a byte at a time (each read well within the timeout) both end
    at the deadline, not one read-timeout per byte later."""
    chat.control(script=[step])
    start = time.monotonic()
    with pytest.raises(InferenceTimeout):
        provider.complete("m1", MESSAGES, {}, 0.6)
    assert time.monotonic() - start < 1.0


def test_none_provider_is_unconfigured() -> None:
    none = NoGeneration()
    assert not none.configured
    with pytest.raises(InferenceUnavailable):
        none.complete("m", MESSAGES, {}, 1)


# -- settings -------------------------------------------------------------------------------------------------


def test_defaults_are_off() -> None:
    settings = InferenceSettings.from_env({})
    assert settings.generation.provider == "none"
    assert settings.rerank.mode == "off" and settings.expansion == "none"
    assert isinstance(build_generation_provider(settings.generation), NoGeneration)


def test_rerank_inherits_each_setting_from_generation() -> None:
    env = {
        "POWERCONTEXT_GENERATION": "openai-compatible",
        "POWERCONTEXT_GENERATION_BASE_URL": "http://127.0.0.1:9/v1",
        "POWERCONTEXT_GENERATION_MODEL": "gen-model",
        "POWERCONTEXT_GENERATION_API_KEY": API_KEY,
        "POWERCONTEXT_GENERATION_TIMEOUT": "3.5",
        "POWERCONTEXT_GENERATION_MAX_REQUESTS": "5",
        "POWERCONTEXT_GENERATION_SETTINGS": '{"top_p": 0.9, "seed": 7}',
        "POWERCONTEXT_RERANK": "listwise",
    }
    inherited = InferenceSettings.from_env(env).rerank_call()
    assert (inherited.model, inherited.timeout_s, inherited.max_requests) == ("gen-model", 3.5, 5)
    assert inherited.settings == {"candidate_limit": 30, "seed": 7, "temperature": 0.0, "top_p": 0.9}
    separate = InferenceSettings.from_env(
        {
            **env,
            "POWERCONTEXT_RERANK_MODEL": "rank-model",
            "POWERCONTEXT_RERANK_TIMEOUT": "1.5",
            "POWERCONTEXT_RERANK_MAX_REQUESTS": "2",
            "POWERCONTEXT_RERANK_SETTINGS": '{"seed": 9, "candidate_limit": 12}',
        }
    ).rerank_call()
    assert (separate.model, separate.timeout_s, separate.max_requests) == ("rank-model", 1.5, 2)
    assert separate.settings == {"candidate_limit": 12, "seed": 9, "temperature": 0.0, "top_p": 0.9}
    assert API_KEY not in repr(InferenceSettings.from_env(env))


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"POWERCONTEXT_GENERATION": "gpt"}, "POWERCONTEXT_GENERATION"),
        ({"POWERCONTEXT_GENERATION": "openai-compatible"}, "POWERCONTEXT_GENERATION_BASE_URL"),
        ({"POWERCONTEXT_RERANK": "listwise"}, "POWERCONTEXT_RERANK"),
        ({"POWERCONTEXT_RERANK": "sometimes"}, "POWERCONTEXT_RERANK"),
        ({"POWERCONTEXT_EXPANSION": "model"}, "POWERCONTEXT_EXPANSION"),
        ({"POWERCONTEXT_GENERATION_TIMEOUT": "0"}, "POWERCONTEXT_GENERATION_TIMEOUT"),
        ({"POWERCONTEXT_RERANK_MAX_REQUESTS": "lots"}, "POWERCONTEXT_RERANK_MAX_REQUESTS"),
        ({"POWERCONTEXT_GENERATION_SETTINGS": "[1]"}, "POWERCONTEXT_GENERATION_SETTINGS"),
        ({"POWERCONTEXT_RERANK_SETTINGS": '{"api_key": "x"}'}, "POWERCONTEXT_RERANK_SETTINGS"),
        ({"POWERCONTEXT_RERANK_SETTINGS": '{"temperature": "hot"}'}, "POWERCONTEXT_RERANK_SETTINGS"),
        ({"POWERCONTEXT_RERANK_SETTINGS": '{"candidate_limit": 1000}'}, "POWERCONTEXT_RERANK_SETTINGS"),
        ({"POWERCONTEXT_GENERATION_BASE_URL": "ftp://secret@host"}, "POWERCONTEXT_GENERATION_BASE_URL"),
    ],
)
def test_bad_settings_name_the_variable(env: dict[str, str], named: str) -> None:
    with pytest.raises(GenerationConfigError) as caught:
        InferenceSettings.from_env(env)
    assert named in str(caught.value)
    assert "secret@host" not in str(caught.value)
