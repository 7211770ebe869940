"""What the real-host end-to-end tests share: the pinned CLIs, a throwaway HOME and project, a hung Server.

The CLIs are the pinned npm packages ``.ci/run`` installs into a versioned cache outside the clone
(``tests/hosts_e2e/pinned.py``). A CLI that cannot be found fails the test under ``CI=true`` (untested is
unsupported) and skips it elsewhere.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.hosts_e2e.pinned import install_dir, pinned_cli

_CLI_HOST = {"claude": "claude-code", "codex": "codex"}
HOOK_BUDGET_MS = 1500  # the default budget


def host_cli(name: str) -> str:
    """The pinned CLI's path (``claude`` or ``codex``); fails under CI, skips elsewhere, when it is not installed."""
    return str(pinned_cli(_CLI_HOST[name]))


def _node_bins() -> list[str]:
    return [str(install_dir(host) / "node_modules" / ".bin") for host in _CLI_HOST.values()]


@dataclass(frozen=True)
class Sandbox:
    home: Path
    project: Path
    env: dict[str, str]

    def run(self, args: list[str], timeout: float = 180) -> tuple[subprocess.CompletedProcess[str], float]:
        started = time.monotonic()
        done = subprocess.run(
            args,
            cwd=self.project,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
        return done, time.monotonic() - started

    def powercontext(self, *args: str) -> subprocess.CompletedProcess[str]:
        done, _ = self.run([str(Path(sys.executable).parent / "powercontext"), *args], timeout=120)
        return done

    def last_hook_outcome(self) -> dict[str, object]:
        data = json.loads((self.home / ".local" / "state" / "powercontext" / "last-hook-outcome.json").read_text())
        assert isinstance(data, dict)
        return data


def make_sandbox(base: Path, on_path: bool = True, **extra_env: str) -> Sandbox:
    """A throwaway HOME and a fresh git project; PATH has only the venv's (unless not ``on_path``: the README's
    install, ``powercontext`` only in ``.venv/bin``), the pinned CLIs' and the system's bins."""
    home = base / "home"
    project = base / "project"
    venv_bin = [str(Path(sys.executable).parent)] if on_path else []
    home.mkdir()
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = {
        "HOME": str(home),
        "PATH": os.pathsep.join([*venv_bin, *_node_bins(), "/usr/local/bin", "/usr/bin", "/bin"]),
        "LANG": "C.UTF-8",
        "POWERCONTEXT_HOOK_TIMEOUT_MS": str(HOOK_BUDGET_MS),
        **extra_env,
    }
    return Sandbox(home, project.resolve(), env)


def claude_sandbox(base: Path, model_url: str, on_path: bool = True) -> Sandbox:
    """``make_sandbox`` for Claude Code talking to the fake Anthropic model at ``model_url``, offline."""
    return make_sandbox(
        base,
        on_path,
        ANTHROPIC_BASE_URL=model_url,
        ANTHROPIC_API_KEY="sk-test-dummy",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
    )


@contextmanager
def hung_server(port: int) -> Iterator[None]:
    """Accepts connections on ``port`` and never answers (a Server stuck mid-request)."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=2)
        for conn in held:
            conn.close()
        listener.close()
