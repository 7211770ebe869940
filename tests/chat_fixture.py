"""Start the fake chat server (``tests.chat_server``) as a real process on a free loopback port."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.support import TLS, free_port, stop_process

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass
class ChatServer:
    """A running fake server. ``base_url`` ends in ``/v1``, as a provider's base URL would."""

    origin: str
    process: subprocess.Popen[bytes]

    @property
    def base_url(self) -> str:
        return self.origin + "/v1"

    def control(self, default: dict[str, Any] | None = None, script: list[dict[str, Any]] | None = None) -> None:
        """How the next /chat/completions requests are answered (see ``tests.chat_server``)."""
        body: dict[str, Any] = {}
        if default is not None:
            body["default"] = default
        if script is not None:
            body["script"] = script
        httpx.post(self.origin + "/control", json=body, timeout=10, verify=TLS).raise_for_status()

    def bodies(self) -> list[dict[str, Any]]:
        """Every request body received since the last reset, in order."""
        response = httpx.get(self.origin + "/control/stats", timeout=10, verify=TLS)
        response.raise_for_status()
        bodies: list[dict[str, Any]] = response.json()["bodies"]
        return bodies

    def requests(self) -> int:
        return len(self.bodies())

    def reset(self) -> None:
        httpx.post(self.origin + "/control/reset", timeout=10, verify=TLS).raise_for_status()


@contextmanager
def start_chat_server(ready_timeout: float = 20.0) -> Iterator[ChatServer]:
    """Spawn ``python -m tests.chat_server``; waits until /health answers; always terminated on exit."""
    port = free_port()
    command = [sys.executable, "-m", "tests.chat_server", "--port", str(port)]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=log, stderr=log)
        server = ChatServer(f"http://127.0.0.1:{port}", process)
        try:
            deadline = time.monotonic() + ready_timeout
            while True:
                if process.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"chat server exited:\n{log.read().decode(errors='replace')[-2000:]}")
                try:
                    if httpx.get(server.origin + "/health", timeout=1, verify=TLS).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise TimeoutError("chat server not ready")
                time.sleep(0.02)
            yield server
        finally:
            stop_process(process, 10)
