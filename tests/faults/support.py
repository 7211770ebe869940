"""What the fault tests share: Servers started and SIGKILLed as real processes, batches whose fate is tracked.

Every batch carries an idempotency key per item, so a batch left unanswered by a kill can be sent again after
the restart: its answer says, item by item, whether the item was already stored (``replayed``). A batch is
written whole or not at all, so each answer must be all replayed or all new; and at the end the Scope must
hold exactly one memory per item acknowledged, no more, no less.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests import forked
from tests.conftest import REPO_ROOT
from tests.support import TLS, free_port, wait_until

ITEM_TEXT_BYTES = 2_000  # ~2 KB items, as in issue 42
RESTART_WRITE_S = 15.0  # a write after every restart must succeed within this


@dataclass
class Server:
    process: forked.ForkedProcess
    url: str
    log: Path

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def events(self, last: int = 30) -> str:
        """The Server log's last lines other than access lines (its events and warnings: error numbers, no
        content), for an assertion's message."""
        lines = self.log.read_text(errors="replace").splitlines()
        lines = [line for line in lines if "powercontext.access" not in line]
        return "\n".join(lines[-last:])

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except Exception:
            self.kill()


def server_env() -> dict[str, str]:
    """The environment of a Server under test: none of the caller's settings, the info log, and no embedding
    model (the faults are the store's; the local model, the default when installed, would cost each Server start
    and each 500-item batch seconds of CPU, time in which a kill or a full disk is not what is being tested)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env["POWERCONTEXT_LOG_LEVEL"] = "info"
    env["POWERCONTEXT_EMBEDDINGS"] = "none"
    return env


def store_url(backend: str, base: Path) -> str:
    """A new store of ``backend`` under ``base``: a SQLite file, or a bootstrapped embedded engine directory."""
    if backend == "sqlite":
        return f"sqlite://{base / 'powercontext.db'}"
    from tests.seekdb_support import new_engine_dir, require_seekdb

    require_seekdb()
    return f"seekdb://{new_engine_dir(base)}"


def start(store: str, log: Path, timeout_s: float = 90.0) -> Server:
    """A forked Server on ``store``, once ``/health/ready`` answers (it may answer 503 with a reason)."""
    port = free_port()
    process = forked.start_server(db="", port=port, store=store, stderr=log, env=server_env(), cwd=REPO_ROOT)
    url = f"http://127.0.0.1:{port}"

    def answering() -> bool:
        if process.poll() is not None:
            return True
        try:
            return httpx.get(url + "/health/ready", timeout=2, verify=TLS).status_code in (200, 503)
        except httpx.TransportError:
            return False

    assert wait_until(answering, timeout=timeout_s, interval=0.1), f"no answer from the Server:\n{log.read_text()}"
    assert process.poll() is None, f"the Server exited with {process.returncode}:\n{log.read_text()}"
    return Server(process, url, log)


def item(tag: str, n: int) -> dict[str, Any]:
    """One ~2 KB memory whose text starts with its own idempotency key."""
    key = f"{tag}-{n}"
    text = f"{key} " + ("ledger settlement entry " * 100)[: ITEM_TEXT_BYTES - len(key) - 1]
    return {"text": text, "kind": "fact", "idempotency_key": key}


@dataclass
class Ledger:
    """Which items the Server acknowledged, and which batches it left unanswered (to be replayed)."""

    acknowledged: set[str] = field(default_factory=set)
    unanswered: list[list[dict[str, Any]]] = field(default_factory=list)
    refused: list[int] = field(default_factory=list)  # statuses other than 201: none is expected
    last_refusal: httpx.Response | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def send(self, http: httpx.Client, scope_id: str, items: list[dict[str, Any]]) -> int | None:
        """Post one batch; record the outcome. The status, or None when the connection broke (a kill)."""
        try:
            r = http.post(f"/v1/scopes/{scope_id}/atomic-memory/batch", json={"items": items}, timeout=120)
        except httpx.TransportError:
            with self.lock:
                self.unanswered.append(items)
            return None
        if r.status_code == 201:
            body = r.json()["items"]
            replayed = {bool(entry["replayed"]) for entry in body}
            assert len(replayed) == 1, "a batch was stored in part: some items replayed, others new"
            with self.lock:
                self.acknowledged.update(entry["idempotency_key"] for entry in items)
        else:
            with self.lock:
                self.refused.append(r.status_code)
                self.last_refusal = r
        return r.status_code

    def replay(self, url: str, scope_id: str) -> None:
        """Send every unanswered batch again; each must now be acknowledged (whole: replayed or new)."""
        pending, self.unanswered = self.unanswered, []
        with httpx.Client(base_url=url, verify=TLS) as http:
            for items in pending:
                assert self.send(http, scope_id, items) == 201


def concurrent_batches(
    url: str, scope_id: str, ledger: Ledger, tag: str, batches: int, size: int
) -> list[threading.Thread]:
    """Start ``batches`` concurrent batch posts of ``size`` items; the caller joins the threads."""

    def post(n: int) -> None:
        items = [item(f"{tag}-b{n}", i) for i in range(size)]
        with httpx.Client(base_url=url, verify=TLS) as http:
            ledger.send(http, scope_id, items)

    threads = [threading.Thread(target=post, args=(n,)) for n in range(batches)]
    for thread in threads:
        thread.start()
    return threads


def write_one(url: str, scope_id: str, text: str) -> httpx.Response:
    """One memory written right after a restart, with the deadline issue 42 sets."""
    started = time.monotonic()
    r = httpx.post(
        f"{url}/v1/scopes/{scope_id}/atomic-memory",
        json={"text": text, "kind": "fact"},
        timeout=RESTART_WRITE_S,
        verify=TLS,
    )
    assert time.monotonic() - started < RESTART_WRITE_S
    return r


def stored_keys(url: str, scope_id: str) -> list[str]:
    """The key each active memory of the Scope starts with (``item``), read page by page over HTTP."""
    keys: list[str] = []
    cursor: str | None = None
    with httpx.Client(base_url=url, verify=TLS, timeout=60) as http:
        while True:
            params: dict[str, Any] = {"limit": 200}
            if cursor:
                params["cursor"] = cursor
            r = http.get(f"/v1/scopes/{scope_id}/atomic-memory", params=params)
            assert r.status_code == 200, r.text
            body = r.json()
            keys.extend(entry["text"].split(" ", 1)[0] for entry in body["items"])
            cursor = body.get("next_cursor")
            if not cursor:
                return keys


def create_scope(url: str, scope_id: str) -> None:
    r = httpx.post(f"{url}/v1/scopes", json={"scope_id": scope_id, "title": "faults"}, timeout=30, verify=TLS)
    assert r.status_code == 201, r.text
