"""The README's main job needs only the ``server`` extra: the optional extras' packages may be missing.

The packages of the other extras (oceanbase, otel, embeddings, dev) are made unimportable in the Server
process, as on a machine where only ``pip install -e '.[server]'`` ran; the real CLI then serves SQLite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from tests.support import free_port, wait_until

OPTIONAL = (
    "pymysql",
    "pylibseekdb",
    "opentelemetry.sdk",
    "tokenizers",
    "onnx",
    "onnxruntime",
    "openvino",
    "playwright",
    "schemathesis",
)
RUN = (
    "import sys\n"
    "for name in {optional!r}: sys.modules[name] = None  # import raises ImportError, as if not installed\n"
    "from powercontext.cli.main import main\n"
    "sys.argv = ['powercontext', 'server', 'run', '--db', {db!r}, '--port', '{port}']\n"
    "main()\n"
)


def test_server_run_serves_sqlite_without_the_optional_extras(tmp_path: Path) -> None:
    port = free_port()
    code = RUN.format(optional=OPTIONAL, db=str(tmp_path / "only-server.db"), port=port)
    log = (tmp_path / "server.log").open("wb")
    process = subprocess.Popen([sys.executable, "-c", code], stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        if process.poll() is not None:
            return True
        try:
            return httpx.get(f"{base}/health/ready", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_until(ready, timeout=30, interval=0.1)
        assert process.poll() is None, (tmp_path / "server.log").read_text()
        with httpx.Client(base_url=base, timeout=10) as http:
            assert http.post("/v1/scopes", json={"scope_id": "p:only", "title": "Only"}).status_code == 201
            memory = {"text": "We chose SQLite as the embedded default.", "kind": "decision"}
            assert http.post("/v1/scopes/p:only/atomic-memory", json=memory).status_code == 201
            prepared = http.post("/v1/context/prepare", json={"scope_id": "p:only", "query": "Why SQLite?"})
            assert prepared.status_code == 200
            assert prepared.json()["status"] == "ready"
            # MCP is part of `server`: /mcp answers an initialize (and refuses GET rather than holding it open).
            initialize = {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
            accept = {"Accept": "application/json, text/event-stream"}
            answered = http.post("/mcp", json=initialize, headers=accept)
            assert answered.status_code == 200, answered.text
            assert answered.json()["result"]["serverInfo"]["name"] == "powercontext"
            assert http.get("/mcp", headers=accept).status_code == 405
    finally:
        process.terminate()
        process.wait(timeout=15)
        log.close()


def test_a_seekdb_store_without_the_oceanbase_extra_is_one_line(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "for name in ('pymysql', 'pylibseekdb'): sys.modules[name] = None\n"
        "from powercontext.cli.main import main\n"
        f"sys.argv = ['powercontext', 'server', 'run', '--store', 'seekdb:///{tmp_path}/seek']\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "pip install 'powercontext[oceanbase]'" in done.stderr
    assert "Traceback" not in done.stderr
