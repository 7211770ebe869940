"""A fake OpenAI-compatible chat-completions server for the test suite, scripted at run time over HTTP.

    python -m tests.chat_server --port P

``POST <any prefix>/chat/completions`` answers ``{"choices": [{"message": {"role": "assistant", "content": C}}]}``
where C depends on the step taken for that request: the next entry of the ``script`` queue, else the default.

A step is an object ``{"mode": ..., ...}``:

* ``answer``: C is ``content`` verbatim.
* ``rank``: C is ``{"ranks": [...]}``, the numbers of the candidates (lines ``[n] text`` of the last message)
  whose text contains ``keyword`` (case-insensitive), in candidate order; every candidate when ``keyword`` is
  empty; in reverse order when ``reverse`` is true.
* ``operations``: C is ``{"operations": [...]}`` from the step's ``operations``, where a revise or forget names its
  memory by ``match`` (a substring of a numbered line ``[n] …`` of the last message) instead of its number, and a
  merge its memories by ``matches`` (one substring each).
* ``error`` (HTTP 500); ``garbage`` (200, not JSON); ``stall`` (sleep ``delay_s``, then answer as ``then``, a
  nested step, default ``rank``); ``trickle`` (headers at once, then the body one byte every ``delay_s``).
* any step may carry ``delay_s``: a fixed latency for benchmarks. It counts from the moment the request line
  arrived, and the answer is built before the wait, so parsing and encoding are inside the delay: a call costs
  its client ``delay_s`` plus the loopback round trip, not ``delay_s`` plus this server's own work.

Control (not part of any real server):

* ``POST /control`` ``{"default": step, "script": [step, ...]}``.
* ``GET /control/stats``: ``{"requests": n, "bodies": [each request body, in order]}``.
* ``POST /control/reset``: everything back to the start-up state (default ``rank`` with no keyword).
* ``GET /health``: 200 once listening.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any

from tests.fake_http import AnswerWriter

MODES = ("answer", "rank", "operations", "error", "garbage", "stall", "trickle")
CANDIDATE_LINE = re.compile(r"^\[(\d+)\] (.*)$", re.MULTILINE)


def _default_step() -> dict[str, Any]:
    return {"mode": "rank", "keyword": ""}


@dataclass
class _State:
    default: dict[str, Any] = field(default_factory=_default_step)
    script: deque[dict[str, Any]] = field(default_factory=deque)
    bodies: list[Any] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self.lock:
            self.default = _default_step()
            self.script.clear()
            self.bodies = []


SPIN_S = 0.002  # the last stretch of a fixed delay is waited awake


def _wait_until(deadline: float) -> None:
    """Sleep, then spin the last ``SPIN_S``: a thread woken from a sleep on a busy machine can start running
    a millisecond or more late, and that lateness would be charged to the client as the server's latency."""
    left = deadline - time.monotonic()
    if left > SPIN_S:
        time.sleep(left - SPIN_S)
    while time.monotonic() < deadline:
        pass


def ranks_for(last_message: str, keyword: str, reverse: bool = False) -> list[int]:
    """The candidate numbers a ``rank`` step answers for a user message."""
    numbers = [
        int(n) for n, text in CANDIDATE_LINE.findall(last_message) if not keyword or keyword.lower() in text.lower()
    ]
    return numbers[::-1] if reverse else numbers


def operations_for(last_message: str, operations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An ``operations`` step's answer: each ``match`` replaced by the number of the memory line holding it."""
    lines = CANDIDATE_LINE.findall(last_message)
    answered = []
    for op in operations:
        if "match" in op:
            number = next((int(n) for n, text in lines if op["match"] in text), 0)
            op = {**{k: v for k, v in op.items() if k != "match"}, "memory": number}
        if "matches" in op:
            numbers = [next((int(n) for n, text in lines if match in text), 0) for match in op["matches"]]
            op = {**{k: v for k, v in op.items() if k != "matches"}, "memories": numbers}
        answered.append(op)
    return answered


class _Handler(AnswerWriter):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def parse_request(self) -> bool:
        # The request line has just been read: this is when the request arrived.
        self.arrived = time.monotonic()
        return super().parse_request()

    def do_GET(self) -> None:
        state = self.server.state
        if self.path == "/health":
            self._send_json(200, {"status": "ok"})
        elif self.path == "/control/stats":
            with state.lock:
                stats = {"requests": len(state.bodies), "bodies": list(state.bodies)}
            self._send_json(200, stats)
        else:
            self._send_json(404, {"error": "not found"})

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        state = self.server.state
        if self.path == "/control/reset":
            state.reset()
            self._send_json(200, {"status": "reset"})
        elif self.path == "/control":
            update = json.loads(body)
            steps = [update.get("default", state.default), *update.get("script", [])]
            if any(not isinstance(s, dict) or s.get("mode") not in MODES for s in steps):
                self._send_json(400, {"error": "unknown mode"})
                return
            with state.lock:
                state.default = steps[0]
                if "script" in update:
                    state.script = deque(steps[1:])
            self._send_json(200, {"status": "ok"})
        elif self.path.endswith("/chat/completions"):
            self._chat(body)
        else:
            self._send_json(404, {"error": "not found"})

    def _chat(self, raw: bytes) -> None:
        state = self.server.state
        try:
            request = json.loads(raw)
            last = request["messages"][-1]["content"]
        except (ValueError, KeyError, TypeError, IndexError):
            self._send_json(400, {"error": {"message": "bad request"}})
            return
        with state.lock:
            step = state.script.popleft() if state.script else state.default
            state.bodies.append(request)
        self._answer(step, last)

    def _answer(self, step: dict[str, Any], last: str) -> None:
        mode = step["mode"]
        if mode == "stall":
            time.sleep(float(step.get("delay_s", 5.0)))
            self._answer(step.get("then", _default_step()), last)
            return
        if mode == "trickle":
            self._trickle(self._completion("trickled"), float(step.get("delay_s", 0.5)))
            return
        if mode == "error":
            status, data, content_type = 500, b'{"error": {"message": "internal error"}}', "application/json"
        elif mode == "garbage":
            status, data, content_type = 200, b"<html>upstream sent something else</html>", "text/html"
        elif mode == "operations":
            answer = json.dumps({"operations": operations_for(last, step.get("operations", []))})
            status, data, content_type = 200, self._completion(answer), "application/json"
        elif mode == "rank":
            ranks = json.dumps(ranks_for(last, step.get("keyword", ""), bool(step.get("reverse"))))
            status, data, content_type = 200, self._completion('{"ranks": ' + ranks + "}"), "application/json"
        else:
            status, data, content_type = 200, self._completion(str(step.get("content", ""))), "application/json"
        if step.get("delay_s"):
            _wait_until(self.arrived + float(step["delay_s"]))
        self._send(status, data, content_type)

    @staticmethod
    def _completion(content: str) -> bytes:
        payload = {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        }
        return json.dumps(payload).encode("utf-8")

    def _trickle(self, data: bytes, delay_s: float) -> None:
        try:
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            for i in range(len(data)):
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
                time.sleep(delay_s)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State

    def handle_error(self, request: Any, client_address: Any) -> None:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description="fake OpenAI-compatible chat server for tests")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    server = _Server((args.host, args.port), _Handler)
    server.state = _State()
    server.serve_forever(poll_interval=0.1)


if __name__ == "__main__":
    main()
