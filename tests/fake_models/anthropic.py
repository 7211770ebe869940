"""A fake Anthropic Messages API (``POST /v1/messages``), streaming (SSE) or not, for Claude Code.

Point Claude Code at it with ``ANTHROPIC_BASE_URL=<base_url>`` and any ``ANTHROPIC_API_KEY``.
Every model call gets the same one-block text answer; ``count_tokens`` gets a small count.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.fake_models.base import FakeModelServer, ModelRequest, json_answer, serve, sse


def _message(model: str, text: str) -> dict[str, Any]:
    return {
        "id": "msg_fake_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _stream(model: str, text: str) -> list[bytes]:
    start = _message(model, "")
    start.update(content=[], stop_reason=None)
    return sse(
        [
            ("message_start", {"type": "message_start", "message": start}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


@contextmanager
def serve_anthropic(answer: str = "FAKE-ANSWER") -> Iterator[FakeModelServer]:
    def respond(request: ModelRequest) -> tuple[int, str, list[bytes]]:
        body = request.body if isinstance(request.body, dict) else {}
        path = request.path.split("?")[0]
        if request.method == "POST" and path.endswith("/messages/count_tokens"):
            return json_answer(200, {"input_tokens": 10})
        if request.method == "POST" and path.endswith("/messages"):
            model = str(body.get("model", "claude-fake"))
            if body.get("stream"):
                return 200, "text/event-stream", _stream(model, answer)
            return json_answer(200, _message(model, answer))
        return json_answer(404, {"type": "error", "error": {"type": "not_found_error", "message": "fake"}})

    with serve(respond) as fake:
        yield fake
