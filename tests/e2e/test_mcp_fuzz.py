"""One corpus of hostile MCP frames against both transports: ``powercontext mcp`` (stdio) answers each with a
JSON-RPC error and keeps serving; ``/mcp`` (streamable HTTP) answers each below 500 (the SDK refuses or, for
frames it reads as notifications, accepts them unanswered) and keeps serving. Neither
ever echoes an id that JSON-RPC forbids (an object, an array, a boolean)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from queue import Empty, Queue
from typing import Any

import httpx

from tests.conftest import REPO_ROOT, LiveServer
from tests.support import TLS


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


CORPUS: dict[str, bytes] = {
    "deep_array": b"[" * 100_000,
    "deep_closed_array": _nested(100_000),
    "deep_id": b'{"jsonrpc":"2.0","id":' + _nested(5_000) + b',"method":"ping"}',
    "deep_params": b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"memory_add","arguments":'
    + _nested(500)
    + b"}}",
    "object_id": b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
    "array_id": b'{"jsonrpc":"2.0","id":[1],"method":"ping"}',
    "boolean_id": b'{"jsonrpc":"2.0","id":true,"method":"ping"}',
    "nan_id": b'{"jsonrpc":"2.0","id":NaN,"method":"ping"}',
    "not_json": b"\xff\xfe\x00garbage{",
    "string": b'"just a string"',
    "empty_batch": b"[]",
    "junk_batch": b"[1,2,3]",
    "old_version": b'{"jsonrpc":"1.0","id":1,"method":"ping"}',
    "params_not_object": b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":"x"}',
    "tool_name_object": b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":{"x":1}}}',
    "huge": b'{"jsonrpc":"2.0","id":4,"method":"ping","params":{"pad":"' + b"x" * (9 * 1024 * 1024) + b'"}}',
}
FORBIDDEN_IDS = ({"a": 1}, [1], True)


class StdioSession:
    """``powercontext mcp`` on raw pipes: frames in, every answered line out (parsed)."""

    def __init__(self, url: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "powercontext", "mcp", "--url", url],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(REPO_ROOT),
        )  # fmt: skip
        self.lines: Queue[bytes] = Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, frame: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(frame + b"\n")
        self.process.stdin.flush()

    def until(self, msg_id: str) -> list[dict[str, Any]]:
        """Every message answered up to and including the answer to ``msg_id``."""
        seen: list[dict[str, Any]] = []
        while True:
            try:
                line = self.lines.get(timeout=30)
            except Empty:
                raise AssertionError(f"no answer to {msg_id}; stderr: {self._stderr()}") from None
            message = json.loads(line)  # every line is JSON
            assert message.get("jsonrpc") == "2.0"
            seen.append(message)
            if message.get("id") == msg_id:
                return seen

    def _stderr(self) -> str:
        self.process.kill()
        assert self.process.stderr is not None
        return self.process.stderr.read().decode(errors="replace")[-2000:]

    def close(self) -> str:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)
        assert self.process.stderr is not None
        return self.process.stderr.read().decode(errors="replace")


def test_stdio_answers_every_hostile_frame_and_keeps_serving(server: LiveServer) -> None:
    session = StdioSession(server.base_url)
    init = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}
    session.send(json.dumps(init).encode())
    session.until("init")
    for name, frame in CORPUS.items():
        session.send(frame)
        session.send(json.dumps({"jsonrpc": "2.0", "id": f"after-{name}", "method": "ping"}).encode())
        answers = session.until(f"after-{name}")
        assert answers[-1] == {"jsonrpc": "2.0", "id": f"after-{name}", "result": {}}, name
        for answer in answers[:-1]:
            refused = "error" in answer or answer.get("result", {}).get("isError") is True  # a tool's own error
            assert refused and answer["id"] not in FORBIDDEN_IDS, (name, answer)
        if name not in ("empty_batch",):
            assert len(answers) >= 2, f"{name}: no error answered"
    assert session.process.poll() is None, "the stdio server exited"
    stderr = session.close()
    assert "Traceback" not in stderr, stderr[-2000:]


def test_http_answers_every_hostile_frame_without_a_5xx_and_keeps_serving(server: LiveServer) -> None:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx.Client(base_url=server.base_url, timeout=60, verify=TLS) as client:
        for name, frame in CORPUS.items():
            response = client.post("/mcp", content=frame, headers=headers)
            assert response.status_code < 500, (name, response.status_code, response.text[:300])
            for forbidden in ('"id":{', '"id":[', '"id":true'):
                assert forbidden not in response.text.replace(" ", ""), (name, response.text[:300])
            assert client.get("/health/live").status_code == 200
