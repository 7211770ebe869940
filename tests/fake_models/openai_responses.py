"""A fake OpenAI Responses API (``POST /v1/responses``, SSE) for Codex, and Chat Completions for others.

Point Codex at it with a custom provider in ``~/.codex/config.toml``::

    model_provider = "fake"
    [model_providers.fake]
    name = "fake"
    base_url = "<base_url>/v1"
    wire_api = "responses"

Every ``/responses`` call streams one assistant message with the fixed answer; ``/chat/completions``
answers (streaming or not) with the same text; ``GET .../models`` lists one model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.fake_models.base import FakeModelServer, ModelRequest, json_answer, serve, sse

USAGE = {
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 5,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 15,
}


def _responses_stream(model: str, text: str) -> list[bytes]:
    item = {
        "type": "message",
        "id": "msg_fake_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    response = {"id": "resp_fake_1", "object": "response", "model": model, "status": "in_progress", "output": []}
    done = dict(response, status="completed", output=[item], usage=USAGE)
    return sse(
        [
            ("response.created", {"type": "response.created", "response": response}),
            (
                "response.output_item.added",
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": dict(item, content=[], status="in_progress"),
                },
            ),
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": "msg_fake_1",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": text,
                },
            ),
            ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": done}),
        ]
    )


def _chat(model: str, text: str, stream: bool) -> tuple[int, str, list[bytes]]:
    if not stream:
        message = {"role": "assistant", "content": text}
        return json_answer(
            200,
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            },
        )
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
        {
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        },
    ]
    out = [
        f"data: {json.dumps(dict(c, id='chatcmpl-fake', object='chat.completion.chunk', model=model))}\n\n".encode()
        for c in chunks
    ]
    return 200, "text/event-stream", [*out, b"data: [DONE]\n\n"]


@contextmanager
def serve_openai_responses(answer: str = "FAKE-ANSWER") -> Iterator[FakeModelServer]:
    def respond(request: ModelRequest) -> tuple[int, str, list[bytes]]:
        body: dict[str, Any] = request.body if isinstance(request.body, dict) else {}
        path = request.path.split("?")[0]
        model = str(body.get("model", "fake-model"))
        if request.method == "POST" and path.endswith("/responses"):
            return 200, "text/event-stream", _responses_stream(model, answer)
        if request.method == "POST" and path.endswith("/chat/completions"):
            return _chat(model, answer, bool(body.get("stream")))
        if request.method == "GET" and path.endswith("/models"):
            return json_answer(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}], "models": []})
        return json_answer(404, {"error": {"message": "not found (fake)", "type": "invalid_request_error"}})

    with serve(respond) as fake:
        yield fake
