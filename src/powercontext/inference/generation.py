"""Text generation for rerank and expansion: ``none`` and any server speaking ``POST {base}/chat/completions``.

Every call has a **total** deadline: the caller waits at most ``timeout_s`` from the moment it asks, whatever
the server does (stalls before the headers, or trickles the body a byte at a time). The exchange runs through a
``ProviderClient`` (the mechanism the embedding provider uses too), which cancels it when the deadline passes;
the pooled keep-alive connection is reused by the next call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from powercontext.inference.deadline import ProviderClient
from powercontext.inference.errors import InferenceUnavailable

MAX_RESPONSE_BYTES = 1 << 20  # a chat answer larger than this is not an answer to our Prompts
SettingValue = str | int | float | bool


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: str  # "system" | "user"
    content: str


class InvalidOutput(Exception):
    """The model answered, but not within its contract (not JSON, wrong shape, out-of-range values).

    Content-free like every inference error: the message never quotes the answer.
    """

    reason = "invalid_output"


def json_answer(answer: str, what: str) -> object:
    """The JSON value a model answered, a fenced code block around it allowed (it is still the object the
    Prompt asked for); ``InvalidOutput`` naming ``what`` (e.g. "rerank") when it is not JSON."""
    text = answer.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        return json.loads(text)
    except ValueError:
        raise InvalidOutput(f"the {what} answer is not JSON") from None


class GenerationProvider(Protocol):
    """Answers chat messages with text. Raises only ``InferenceError`` subclasses from ``complete``."""

    name: str  # "none" | "openai-compatible"
    configured: bool

    def complete(
        self, model: str, messages: Sequence[ChatMessage], settings: Mapping[str, SettingValue], timeout_s: float
    ) -> str: ...

    def close(self) -> None: ...


class NoGeneration:
    """Generation switched off: ``configured`` is False and every call is unavailable."""

    name = "none"
    configured = False

    def complete(
        self, model: str, messages: Sequence[ChatMessage], settings: Mapping[str, SettingValue], timeout_s: float
    ) -> str:
        raise InferenceUnavailable("no generation provider is configured")

    def close(self) -> None:
        return None


# Safe settings as the chat-completions API names them (``max_output_tokens`` is ours, ``max_tokens`` theirs).
_WIRE_NAMES = {"temperature": "temperature", "top_p": "top_p", "max_output_tokens": "max_tokens", "seed": "seed"}


class OpenAICompatibleGeneration:
    """A thread-safe client for one chat-completions server; one connection pool shared by every caller."""

    name = "openai-compatible"
    configured = True

    def __init__(self, base_url: str, *, api_key: str | None = None) -> None:
        self._client = ProviderClient(base_url.rstrip("/") + "/chat/completions", "generation", api_key=api_key)

    def complete(
        self, model: str, messages: Sequence[ChatMessage], settings: Mapping[str, SettingValue], timeout_s: float
    ) -> str:
        body: dict[str, object] = {
            "model": model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "stream": False,
        }
        body.update({_WIRE_NAMES[k]: v for k, v in settings.items() if k in _WIRE_NAMES})
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        raw = self._client.post(content, timeout_s, MAX_RESPONSE_BYTES)
        return _message_text(raw)

    def close(self) -> None:
        self._client.close()


def _message_text(raw: bytes) -> str:
    """The first choice's message content. A body that is not a chat completion is the server's failure
    (``inference_unavailable``); what the model wrote inside it is judged by the caller (``invalid_output``)."""
    try:
        payload = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise InferenceUnavailable("the generation server answered with a body that is not JSON") from None
    choices = payload.get("choices") if isinstance(payload, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise InferenceUnavailable("the generation server answered without choices[0].message.content")
    return content
