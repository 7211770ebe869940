"""A fake OpenAI-compatible embedding server for the test suite, controllable at run time over HTTP.

    python -m tests.embedding_server --port P --dim D

``POST <any prefix>/embeddings`` with ``{"model": ..., "input": [...]}`` answers a hashed bag of words: each
lower-cased word adds 1 to one of D buckets, then the vector is L2-normalised. Texts that share words are
therefore similar, and tests can predict nearest neighbours (``hashed_vector`` computes the same vector).

Control (not part of any real server):

* ``POST /control`` ``{"mode": ..., "stall_s": float, "trickle_s": float, "script": [mode, ...],
  "shuffle": bool}``: ``script`` is a queue consumed one entry per /embeddings request before falling back
  to ``mode``. Modes: ``answer``; ``error`` (HTTP 500); ``garbage`` (200, not JSON); ``bad_shape`` (200,
  JSON without a list in ``data``); ``wrong_dim`` (vectors one longer than D); ``wrong_count`` (one vector
  too few); ``nan`` (a NaN in the first vector); ``non_numeric`` (a string in the first vector);
  ``bad_index`` (every ``index`` is 0); ``stall`` (sleep ``stall_s``, then answer); ``trickle`` (the whole
  answer, status line and headers included, one byte every ``trickle_s`` seconds, as a provider behind a
  stuck link). ``shuffle`` answers the items in reverse order, each with its correct ``index``.
* ``GET /control/stats``: ``{"requests", "inputs", "batch_sizes", "authorization", "model"}`` (the last two are
  from the latest /embeddings request).
* ``POST /control/reset``: everything back to the start-up state.
* ``GET /health``: 200 once listening.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any

from tests.fake_http import AnswerWriter

MODES = (
    *("answer", "error", "garbage", "bad_shape", "wrong_dim"),
    *("wrong_count", "nan", "non_numeric", "bad_index", "stall", "trickle"),
)
_WORD = re.compile(r"\w+")


def hashed_vector(text: str, dim: int) -> list[float]:
    """The unit vector this server answers for ``text``; a text without words gets its own fixed bucket."""
    counts = [0.0] * dim
    words = _WORD.findall(text.lower()) or [""]
    for word in words:
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
        counts[int.from_bytes(digest, "little") % dim] += 1.0
    norm = math.sqrt(sum(c * c for c in counts))
    return [c / norm for c in counts]


@dataclass
class _State:
    dim: int
    mode: str = "answer"
    stall_s: float = 5.0
    trickle_s: float = 1.0
    shuffle: bool = False
    script: deque[str] = field(default_factory=deque)
    requests: int = 0
    inputs: int = 0
    batch_sizes: list[int] = field(default_factory=list)
    authorization: str | None = None
    model: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self.lock:
            self.mode, self.stall_s, self.trickle_s, self.shuffle = "answer", 5.0, 1.0, False
            self.script.clear()
            self.requests = self.inputs = 0
            self.batch_sizes = []
            self.authorization = self.model = None


class _Handler(AnswerWriter):
    protocol_version = "HTTP/1.1"  # keep-alive, as the client under test pools connections
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read their own assertions
        return None

    def do_GET(self) -> None:
        state = self.server.state
        if self.path == "/health":
            self._send_json(200, {"status": "ok"})
        elif self.path == "/control/stats":
            with state.lock:
                stats = {
                    "requests": state.requests,
                    "inputs": state.inputs,
                    "batch_sizes": list(state.batch_sizes),
                    "authorization": state.authorization,
                    "model": state.model,
                }
            self._send_json(200, stats)
        else:
            self._send_json(404, {"error": "not found"})

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.path == "/control/reset":
            self.server.state.reset()
            self._send_json(200, {"status": "reset"})
        elif self.path == "/control":
            self._control(body)
        elif self.path.endswith("/embeddings"):
            self._embeddings(body)
        else:
            self._send_json(404, {"error": "not found"})

    def _control(self, body: bytes) -> None:
        state = self.server.state
        try:
            update = json.loads(body)
            modes = [update.get("mode", state.mode), *update.get("script", [])]
            if any(m not in MODES for m in modes):
                raise ValueError("unknown mode")
            stall_s = float(update.get("stall_s", state.stall_s))
            trickle_s = float(update.get("trickle_s", state.trickle_s))
        except (ValueError, TypeError, AttributeError) as exc:
            self._send_json(400, {"error": str(exc)})
            return
        with state.lock:
            state.mode, state.stall_s, state.trickle_s = modes[0], stall_s, trickle_s
            state.shuffle = bool(update.get("shuffle", state.shuffle))
            if "script" in update:
                state.script = deque(modes[1:])
        self._send_json(200, {"status": "ok"})

    def _embeddings(self, body: bytes) -> None:
        state = self.server.state
        try:
            request = json.loads(body)
            texts = request["input"]
            if isinstance(texts, str):
                texts = [texts]
        except (ValueError, KeyError, TypeError):
            self._send_json(400, {"error": {"message": "bad request"}})
            return
        with state.lock:
            mode = state.script.popleft() if state.script else state.mode
            stall_s, trickle_s, shuffle = state.stall_s, state.trickle_s, state.shuffle
            state.requests += 1
            state.inputs += len(texts)
            state.batch_sizes.append(len(texts))
            state.authorization = self.headers.get("authorization")
            state.model = request.get("model")
        if mode == "error":
            self._send_json(500, {"error": {"message": "internal error"}})
            return
        if mode == "garbage":
            self._send(200, b"<html>upstream sent something else</html>", "text/html")
            return
        if mode == "bad_shape":
            self._send_json(200, {"object": "list", "data": "nothing here"})
            return
        if mode == "stall":
            time.sleep(stall_s)
        dim = state.dim + 1 if mode == "wrong_dim" else state.dim
        items = [{"object": "embedding", "index": i, "embedding": hashed_vector(t, dim)} for i, t in enumerate(texts)]
        if mode == "wrong_count":
            items.pop()
        elif mode == "nan" and items:
            items[0]["embedding"][0] = float("nan")  # json.dumps writes NaN, as some servers do
        elif mode == "non_numeric" and items:
            items[0]["embedding"][0] = "0.5"
        elif mode == "bad_index":
            for item in items:
                item["index"] = 0
        if shuffle:
            items.reverse()
        answer = {"object": "list", "model": request.get("model"), "data": items}
        if mode == "trickle":
            self._trickle(json.dumps(answer).encode("utf-8"), trickle_s)
            return
        self._send_json(200, answer)

    def _trickle(self, data: bytes, interval_s: float) -> None:
        head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {len(data)}\r\n\r\n"
        try:
            for byte in head.encode("ascii") + data:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(interval_s)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up at its deadline: expected
            pass
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State

    def handle_error(self, request: Any, client_address: Any) -> None:  # a dropped client is not news
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description="fake OpenAI-compatible embedding server for tests")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--dim", type=int, required=True)
    args = parser.parse_args()
    server = _Server((args.host, args.port), _Handler)
    server.state = _State(dim=args.dim)
    server.serve_forever(poll_interval=0.1)


if __name__ == "__main__":
    main()
