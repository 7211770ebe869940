"""What the fake provider servers (``tests.chat_server``, ``tests.embedding_server``) share: writing one answer."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler


class AnswerWriter(BaseHTTPRequestHandler):
    """A request handler that writes each answer's status line, headers and body in one write."""

    def _send_json(self, status: int, payload: object) -> None:
        self._send(status, json.dumps(payload).encode("utf-8"), "application/json")

    def _send(self, status: int, data: bytes, content_type: str) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(data)))
            # Headers and body in one write: two small writes would meet Nagle's algorithm and the client's
            # delayed ACK, adding ~40 ms to every answer.
            self._headers_buffer.append(b"\r\n")
            self._headers_buffer.append(data)
            self.flush_headers()
        except (BrokenPipeError, ConnectionResetError):  # the client gave up at its deadline: expected
            self.close_connection = True
