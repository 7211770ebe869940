"""What every fake model server shares: a threaded HTTP server on 127.0.0.1 that logs each request."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_BODY = 64 * 1024 * 1024


@dataclass(frozen=True)
class ModelRequest:
    method: str
    path: str
    body: Any  # the parsed JSON body, or the raw text when it is not JSON, or None
    raw: str


@dataclass
class FakeModelServer:
    """A running fake: its base URL and every request it has received so far."""

    base_url: str
    requests: list[ModelRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def log(self, request: ModelRequest) -> None:
        with self.lock:
            self.requests.append(request)

    def model_requests(self) -> list[ModelRequest]:
        with self.lock:
            return [r for r in self.requests if r.method == "POST"]

    def saw(self, marker: str) -> bool:
        """True once any request body received so far contains ``marker``."""
        return any(marker in r.raw for r in self.model_requests())


# (handler, method, path, body) -> (status, content type, chunks to write); chunks let SSE stream event by event.
Responder = Callable[[ModelRequest], tuple[int, str, list[bytes]]]


def _handler_class(server: FakeModelServer, respond: Responder) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the request log is the list above; stderr stays quiet

        def _handle(self, method: str) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(min(length, MAX_BODY)).decode("utf-8", errors="replace") if length else ""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw
            request = ModelRequest(method, self.path, body, raw)
            server.log(request)
            status, content_type, chunks = respond(request)
            try:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(sum(len(c) for c in chunks)))
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(chunk)
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def do_GET(self) -> None:
            self._handle("GET")

        def do_POST(self) -> None:
            self._handle("POST")

        def do_HEAD(self) -> None:
            self._handle("HEAD")

    return Handler


@contextmanager
def serve(respond: Responder) -> Iterator[FakeModelServer]:
    """Serve ``respond`` on a free loopback port until the block ends."""
    fake = FakeModelServer(base_url="")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(fake, respond))
    httpd.daemon_threads = True
    fake.base_url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, name="fake-model", daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        httpd.shutdown()
        httpd.server_close()


def sse(events: list[tuple[str, dict[str, Any]]]) -> list[bytes]:
    """Server-sent events, one chunk per event (``event:`` and ``data:`` lines)."""
    return [f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events]


def json_answer(status: int, payload: Any) -> tuple[int, str, list[bytes]]:
    return status, "application/json", [json.dumps(payload).encode()]
