"""The short route (``cli.quick``) prints what the full CLI prints, and never sends a write twice.

``memory add``, ``memory search`` and ``context prepare`` in their common shape skip Typer, pydantic and httpx.
Each case here runs the console script (``python -m powercontext``, which takes the short route where it can)
and the full Typer CLI (``powercontext.cli.main``) as fresh processes against the same live Server, and
compares exit code, stdout and stderr. Writes go to two Scopes holding the same memories, one per route; ids
Scope names and times are then the only difference and are normalised.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from powercontext.cli.quick import TIMEOUT_S
from tests.conftest import LiveServer
from tests.support import Api

SHORT = [sys.executable, "-m", "powercontext"]
FULL = [
    sys.executable,
    "-c",
    "import sys; sys.argv[0] = 'powercontext'; from powercontext.cli.main import main; main()",
]
SEEDED = (
    ("The settlement batch runs nightly at 02:00 UTC.", "fact"),
    ("We chose Postgres for the ledger because it needs serializable transactions.", "decision"),
    ("Hostile \x1b[2J body with a bidi \u202e override and a BEL \x07.", "note"),
)


def run(command: list[str], args: list[str], url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env["POWERCONTEXT_URL"] = url
    return subprocess.run([*command, *args], capture_output=True, text=True, env=env, timeout=120, check=False)


def seeded_scope(api: Api) -> str:
    scope_id = api.new_scope(prefix="short-route")
    for text, kind in SEEDED:
        api.add(scope_id, text, kind=kind)
    return scope_id


def normalised(result: subprocess.CompletedProcess[str], scope_id: str) -> tuple[int, str, str]:
    def clean(text: str) -> str:
        text = re.sub(r"am_[0-9a-z]+", "am_X", text.replace(scope_id, "SCOPE"))
        return re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z", "TIME", text)

    return result.returncode, clean(result.stdout), clean(result.stderr)


READS = [
    ["memory", "search", "settlement batch"],
    ["memory", "search", "ledger Postgres", "--limit", "1", "--mode", "fts", "--json"],
    ["memory", "search", "hostile bidi"],
    ["context", "prepare", "-q", "when does the settlement batch run?"],
    ["context", "prepare", "--query", "why Postgres?", "--max-bytes", "600", "--json"],
    ["context", "prepare", "-q", "hostile override"],
    ["context", "prepare", "-q", "zebra giraffe okapi"],  # nothing fits: empty
    ["memory", "search", "x", "--limit", "0"],  # refused before sending, by the full CLI's check
    ["memory", "search", "x", "--mode", "hybird"],
    ["context", "prepare", "-q", " "],  # refused by the wire model's check
]


@pytest.mark.parametrize("args", READS, ids=[" ".join(a) for a in READS])
def test_a_read_prints_what_the_full_cli_prints(server: LiveServer, api: Api, args: list[str]) -> None:
    scope_id = seeded_scope(api)
    line = [*args[:2], "-s", scope_id, *args[2:]]
    short = run(SHORT, line, server.base_url)
    full = run(FULL, line, server.base_url)
    assert normalised(short, scope_id) == normalised(full, scope_id)
    assert "\x1b" not in short.stdout and "\u202e" not in short.stdout  # stored text is shown terminal-safe


WRITES = [
    ["memory", "add", "The settlement batch now runs nightly at 03:00 UTC.", "--kind", "fact"],  # may supersede
    ["memory", "add", "Refunds are settled weekly.", "--tag", "billing", "--tag", "refunds", "--json"],
    ["memory", "add", "A typo in the kind.", "--kind", "decison"],  # refused: nothing written
    ["memory", "add", "Hostile \x1b]0;title\x07 text."],
]


@pytest.mark.parametrize("args", WRITES, ids=[" ".join(a[:3]) + " " + a[-1] for a in WRITES])
def test_a_write_prints_what_the_full_cli_prints(server: LiveServer, api: Api, args: list[str]) -> None:
    by_short, by_full = seeded_scope(api), seeded_scope(api)
    short = run(SHORT, [*args[:2], "-s", by_short, *args[2:]], server.base_url)
    full = run(FULL, [*args[:2], "-s", by_full, *args[2:]], server.base_url)
    assert normalised(short, by_short) == normalised(full, by_full)
    heads = [api.http.get(f"/v1/scopes/{s}/atomic-memory").json()["items"] for s in (by_short, by_full)]
    assert len(heads[0]) == len(heads[1]) == len(SEEDED) + (short.returncode == 0)


def test_a_mistyped_scope_and_a_stopped_server_are_told_alike(server: LiveServer, api: Api) -> None:
    scope_id = seeded_scope(api)
    typo = scope_id[:-1] + ("x" if scope_id[-1] != "x" else "y")
    for args in (["memory", "search", "settlement", "-s", typo], ["memory", "add", "A note.", "-s", typo]):
        short, full = run(SHORT, args, server.base_url), run(FULL, args, server.base_url)
        assert short.returncode == full.returncode == 3
        assert short.stderr == full.stderr
        assert f"did you mean {scope_id}?" in short.stderr
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    # A read goes to the full CLI; a write is told by the short route (it is never sent twice): same words.
    for args in (["context", "prepare", "-s", scope_id, "-q", "settlement"], ["memory", "add", "x", "-s", scope_id]):
        short, full = run(SHORT, args, closed), run(FULL, args, closed)
        assert short.returncode == full.returncode == 5
        assert short.stderr == full.stderr
        assert "server-unreachable" in short.stderr


class _FailingServer(ThreadingHTTPServer):
    """Answers every POST with a 500 error body, and counts the requests."""

    posts = 0


class _Failing(BaseHTTPRequestHandler):
    server: _FailingServer

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.posts += 1
        body = json.dumps({"error": {"code": "internal-error", "message": "the Server failed"}}).encode()
        self.send_response(500)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def failing_server() -> Iterator[_FailingServer]:
    server = _FailingServer(("127.0.0.1", 0), _Failing)
    server.posts = 0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_write_whose_outcome_is_unknown_is_sent_once(failing_server: _FailingServer) -> None:
    url = f"http://127.0.0.1:{failing_server.server_address[1]}"
    add = run(SHORT, ["memory", "add", "A note.", "-s", "team:x"], url)
    assert add.returncode == 1
    assert add.stderr == "error: internal-error: the Server failed\n"
    assert failing_server.posts == 1  # a 500 to a write may have been applied: never sent again
    search = run(SHORT, ["memory", "search", "note", "-s", "team:x"], url)
    assert failing_server.posts == 3  # a read is sent again by the full CLI, which tells the error
    assert (search.returncode, search.stderr) == (1, add.stderr)


class _Trickling(BaseHTTPRequestHandler):
    """Reads the request, then sends its status line a byte a second: each read is short, the answer endless."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 600:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(1.0)
        except OSError:
            return

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_an_answer_that_trickles_is_cut_at_the_total_deadline() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Trickling)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        started = time.monotonic()
        add = run(SHORT, ["memory", "add", "A note.", "-s", "team:x"], f"http://127.0.0.1:{server.server_address[1]}")
        elapsed = time.monotonic() - started
    finally:
        server.shutdown()
        server.server_close()
    assert add.returncode == 5
    assert "server-unreachable" in add.stderr and "(ReadTimeout)" in add.stderr
    assert TIMEOUT_S <= elapsed < TIMEOUT_S + 10
