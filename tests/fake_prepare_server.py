"""A misbehaving prepare endpoint, run as a real process: ``python tests/fake_prepare_server.py PORT RECORD_FILE``.

The first path segment picks the behaviour (``/<mode>/v1/context/prepare``), so one process serves every
case. ``record`` appends each prepare body it receives to RECORD_FILE (other bodies, such as captured Sources, to
RECORD_FILE.sources) and answers a valid ``ready``.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CONTENT = "fake prepared context"
VALID = {
    "schema": "powercontext.prepared-context.v1",
    "status": "ready",
    "content": CONTENT,
    "content_bytes": len(CONTENT.encode("utf-8")),
}


def _body(mode: str) -> tuple[int, bytes, dict[str, str]]:
    as_json = {"content-type": "application/json"}
    if mode in ("record", "valid"):
        return 200, json.dumps(VALID).encode(), as_json
    if mode == "five_keys":
        return 200, json.dumps({**VALID, "receipt": {"receipt_id": "x"}}).encode(), as_json
    if mode == "wrong_schema":
        return 200, json.dumps({**VALID, "schema": "powercontext.prepared-context.v2"}).encode(), as_json
    if mode == "wrong_bytes":
        return 200, json.dumps({**VALID, "content_bytes": VALID["content_bytes"] + 1}).encode(), as_json
    if mode == "over_budget":
        big = "x" * 600
        return 200, json.dumps({**VALID, "content": big, "content_bytes": 600}).encode(), as_json
    if mode == "http_500":
        return 500, json.dumps({"error": {"code": "internal-error", "message": "boom"}}).encode(), as_json
    if mode == "non_json":
        return 200, b"<html>not json</html>", {"content-type": "text/html"}
    if mode == "oversized":
        pad = "y" * (1024 * 1024 + 10)
        return 200, json.dumps({**VALID, "content": pad, "content_bytes": len(pad)}).encode(), as_json
    if mode == "surrogate":  # valid JSON whose content holds a lone surrogate: no UTF-8 text a host can show
        return (
            200,
            b'{"schema":"powercontext.prepared-context.v1","status":"ready","content":"a\\ud800b","content_bytes":5}',
            as_json,
        )
    if mode == "deep":  # nested past any parser's stack
        return 200, b"[" * 100_000, as_json
    if mode == "redirect":
        return 307, b"", {"location": "/valid/v1/context/prepare"}
    return 404, b'{"error":{"code":"not-found","message":"no such endpoint"}}', as_json


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    record_file: Path

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        raw = self.rfile.read(length)
        mode = self.path.strip("/").split("/")[0]
        if mode == "record":
            # Prepare bodies go to RECORD_FILE; anything else the hook sends (captured Sources) beside it.
            prepare = self.path.endswith("/v1/context/prepare")
            target = self.record_file if prepare else self.record_file.with_name(self.record_file.name + ".sources")
            with target.open("a", encoding="utf-8") as out:
                out.write(raw.decode("utf-8") + "\n")
        if mode == "slow":
            time.sleep(5)
            mode = "valid"
        if mode == "chunked":
            # A valid answer in two chunks, then the connection is held open for a while.
            body = json.dumps(VALID).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            half = len(body) // 2
            for part in (body[:half], body[half:]):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            time.sleep(3)
            return
        status, body, headers = _body(mode)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(body)


def main() -> None:
    port, record = int(sys.argv[1]), Path(sys.argv[2])
    Handler.record_file = record
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
