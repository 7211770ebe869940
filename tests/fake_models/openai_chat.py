"""A fake OpenAI Chat Completions model for agent-host tests: ``python -m tests.fake_models.openai_chat PORT LOG``.

Every ``POST …/chat/completions`` is appended to LOG (one JSON line: ``{"received_at": <time.time()>,
"body": <the request body>}``) and answered with
``ANSWER`` as a server-sent-event stream (``"stream": true``, what OpenCode and Pi send) or one JSON object.
``GET …/models`` lists one model. It binds 127.0.0.1 only and prints ``ready`` once listening.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ANSWER = "fake-model-answer"
MODEL = "fake-model"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    event = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(event).encode("utf-8") + b"\n\n"


def sse_body() -> bytes:
    usage = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": MODEL,
        "choices": [],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }
    return b"".join(
        [
            _chunk({"role": "assistant", "content": ""}),
            _chunk({"content": ANSWER}),
            _chunk({}, "stop"),
            b"data: " + json.dumps(usage).encode("utf-8") + b"\n\n",
            b"data: [DONE]\n\n",
        ]
    )


def json_body() -> bytes:
    answer = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }
    return json.dumps(answer).encode("utf-8")


class Handler(BaseHTTPRequestHandler):
    log_file: Path
    lock = threading.Lock()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            models = {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "test"}]}
            self._answer(200, json.dumps(models).encode("utf-8"), "application/json")
        else:
            self._answer(404, b"{}", "application/json")

    def do_POST(self) -> None:
        received_at = time.time()
        raw = self.rfile.read(int(self.headers.get("content-length", "0")))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._answer(404, b"{}", "application/json")
            return
        try:
            request = json.loads(raw)
        except ValueError:
            self._answer(400, b'{"error": {"message": "not JSON"}}', "application/json")
            return
        with self.lock, self.log_file.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"received_at": received_at, "body": request}) + "\n")
        if isinstance(request, dict) and request.get("stream"):
            self._answer(200, sse_body(), "text/event-stream")
        else:
            self._answer(200, json_body(), "application/json")


def main() -> None:
    port, log = int(sys.argv[1]), Path(sys.argv[2])
    Handler.log_file = log
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
