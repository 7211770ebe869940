"""Start the fake embedding server (``tests.embedding_server``) as a real process on a free loopback port."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import httpx

from tests.support import TLS, free_port, stop_process

REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass
class EmbeddingServer:
    """A running fake server. ``base_url`` ends in ``/v1``, as a provider's base URL would."""

    origin: str
    dim: int
    process: subprocess.Popen[bytes]

    @property
    def base_url(self) -> str:
        return self.origin + "/v1"

    def control(
        self,
        mode: str | None = None,
        *,
        stall_s: float | None = None,
        trickle_s: float | None = None,
        script: list[str] | None = None,
        shuffle: bool | None = None,
    ) -> None:
        """Change how the next /embeddings requests are answered (see ``tests.embedding_server``)."""
        body: dict[str, Any] = {}
        if mode is not None:
            body["mode"] = mode
        if stall_s is not None:
            body["stall_s"] = stall_s
        if trickle_s is not None:
            body["trickle_s"] = trickle_s
        if script is not None:
            body["script"] = script
        if shuffle is not None:
            body["shuffle"] = shuffle
        httpx.post(self.origin + "/control", json=body, timeout=10, verify=TLS).raise_for_status()

    def stats(self) -> dict[str, Any]:
        response = httpx.get(self.origin + "/control/stats", timeout=10, verify=TLS)
        response.raise_for_status()
        stats: dict[str, Any] = response.json()
        return stats

    def reset(self) -> None:
        httpx.post(self.origin + "/control/reset", timeout=10, verify=TLS).raise_for_status()


@contextmanager
def start_embedding_server(dim: int = 32, ready_timeout: float = 20.0) -> Iterator[EmbeddingServer]:
    """Spawn ``python -m tests.embedding_server``; waits until /health answers; always terminated on exit."""
    port = free_port()
    command = [sys.executable, "-m", "tests.embedding_server", "--port", str(port), "--dim", str(dim)]
    # A file, not a pipe: a pipe nobody drains could fill up and block the server mid-test.
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=log, stderr=log)
        server = EmbeddingServer(f"http://127.0.0.1:{port}", dim, process)
        try:
            _wait_ready(server, ready_timeout, log)
            yield server
        finally:
            stop_process(process, 10)


def _wait_ready(server: EmbeddingServer, timeout: float, log: IO[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            log.seek(0)
            tail = log.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"embedding server exited with {server.process.returncode}:\n{tail}")
        try:
            if httpx.get(server.origin + "/health", timeout=1, verify=TLS).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.02)
    raise TimeoutError(f"embedding server not ready after {timeout:.0f} s")
