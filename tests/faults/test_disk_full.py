"""A full disk under each store: 507 store-full with a message naming the cause, the log names it too,
readiness says so, nothing acknowledged is lost, and writes resume once space is freed (on embedded seekdb, after
a restart when the engine does not start writing again by itself).

The store lives on a small tmpfs mounted in a mount namespace of the Server's own (``unshare -m``, as root; a
user namespace otherwise), so the test fills a real, small file system and no other. The test reaches that
file system through ``/proc/<pid>/root``, which shows the Server's mounts.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import forked
from tests.conftest import REPO_ROOT, SERVE_CODE
from tests.faults.support import Ledger, create_scope, item, server_env, stored_keys
from tests.support import TLS, free_port, stop_process, unique, wait_until

VOLUME_MIB = 16


def fill(path: Path) -> int:
    """Write zeros to ``path`` until the file system is full; the bytes written."""
    written = 0
    chunk = b"\0" * (256 * 1024)
    with path.open("wb", buffering=0) as handle:
        while True:
            try:
                written += handle.write(chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
                break
        for size in (4096, 512):  # the last partial blocks
            try:
                while True:
                    written += handle.write(b"\0" * size)
            except OSError:
                pass
    return written


@pytest.mark.slow
def test_a_full_disk_answers_store_full_and_loses_nothing(tmp_path: Path) -> None:
    volume = tmp_path / "volume"
    volume.mkdir()
    port = free_port()
    serve = SERVE_CODE.format(db=str(volume / "powercontext.db"), port=port, store=None)
    user_ns = () if os.geteuid() == 0 else ("-r",)
    mount = f'mount -t tmpfs -o size={VOLUME_MIB}m tmpfs {volume} && exec "$@"'
    log = tmp_path / "server.log"
    with log.open("wb") as log_file:
        server = subprocess.Popen(
            ["unshare", *user_ns, "-m", "sh", "-c", mount, "sh", sys.executable, "-c", serve],
            stdout=subprocess.DEVNULL,
            stderr=log_file,
            env=server_env(),
            cwd=REPO_ROOT,
        )
    url = f"http://127.0.0.1:{port}"
    seen_by_server = Path(f"/proc/{server.pid}/root") / str(volume).lstrip("/")
    try:

        def answering() -> bool:
            try:
                return server.poll() is not None or httpx.get(url + "/health/ready", verify=TLS).status_code == 200
            except httpx.TransportError:
                return False

        assert wait_until(answering, timeout=60, interval=0.1), log.read_text()
        assert server.poll() is None, log.read_text()
        scope_id = unique("full")
        create_scope(url, scope_id)
        ledger = Ledger()
        with httpx.Client(base_url=url, verify=TLS, timeout=60) as http:  # a loaded machine: seconds per batch
            assert ledger.send(http, scope_id, [item("before", n) for n in range(100)]) == 201

            filler = seen_by_server / "filler"
            assert fill(filler) > 0
            ready = http.get("/health/ready")
            assert ready.status_code == 503 and ready.json()["reason"] == "store-full", ready.text

            refused = http.post(
                f"/v1/scopes/{scope_id}/atomic-memory/batch", json={"items": [item("full", n) for n in range(500)]}
            )
            assert refused.status_code == 507, refused.text
            error = refused.json()["error"]
            assert error["code"] == "store-full"
            assert "disk that holds the store is full" in error["message"] and "nothing was written" in error["message"]
            doctor = forked.run(
                [*forked.POWERCONTEXT, "hosts", "doctor", "--url", url, "--json"],
                timeout=60,
                env=server_env(),
                cwd=tmp_path,
            )
            server_check = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "server")
            assert server_check["status"] == "fail" and "not ready: store-full" in server_check["detail"], doctor.stdout
            assert "free space" in server_check["fix"]
            single = http.post(f"/v1/scopes/{scope_id}/atomic-memory", json={"text": "one more", "kind": "fact"})
            assert single.status_code in (201, 507), single.text  # one small row may still fit
            if single.status_code == 201:
                ledger.acknowledged.add("one")

            filler.unlink()
            assert wait_until(lambda: http.get("/health/ready").status_code == 200, timeout=10)
            assert ledger.send(http, scope_id, [item("after", n) for n in range(500)]) == 201
        keys = stored_keys(url, scope_id)
        assert len(keys) == len(set(keys))
        assert set(keys) == ledger.acknowledged
        log_text = log.read_text()
        assert "event=store.fault cause=disk-full code=store-full operation=write" in log_text
        assert "internal-error" not in log_text and "request.failed" not in log_text
    finally:
        stop_process(server)


# The engine directory (a copy of the run's template: ~185 MB) and ~200 MiB to spare: once the filler is deleted
# the engine must find more than the 64 MiB block its log grows by (the engine's own files take some of the rest).
SEEKDB_VOLUME_MIB = 400
# After the file system is full the engine still takes 8,000 to 14,000 memories of 2 KB (16 to 28 batches,
# measured): its log and data files have room allocated before. Then its log stops.
MOST_BATCHES_ONCE_FULL = 80


def serve_in_namespace(volume: Path, store: str, log: Path, prepare: str, join: int | None = None) -> tuple[Any, str]:
    """A Server on ``store`` in a mount namespace: a new one with a tmpfs on ``volume`` (after the shell command
    ``prepare`` runs there), or the namespace of process ``join``. Returns the process and its URL."""
    port = free_port()
    serve = SERVE_CODE.format(db=str(volume / "unused.db"), port=port, store=store)
    user_ns = () if os.geteuid() == 0 else ("-r",)
    if join is None:
        mount = f'mount -t tmpfs -o size={SEEKDB_VOLUME_MIB}m tmpfs {volume} && {prepare} && exec "$@"'
        command = ["unshare", *user_ns, "-m", "sh", "-c", mount, "sh", sys.executable, "-c", serve]
    else:
        enter = () if os.geteuid() == 0 else ("-U", "--preserve-credentials")
        command = ["nsenter", "-t", str(join), *enter, "-m", sys.executable, "-c", serve]
    with log.open("ab") as log_file:
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log_file, env=server_env(), cwd=REPO_ROOT)
    url = f"http://127.0.0.1:{port}"

    def answering() -> bool:
        try:
            return server.poll() is not None or httpx.get(url + "/health/ready", verify=TLS).status_code == 200
        except httpx.TransportError:
            return False

    assert wait_until(answering, timeout=120, interval=0.1), log.read_text()
    assert server.poll() is None, log.read_text()
    return server, url


def send_pending(url: str, scope_id: str, ledger: Ledger) -> bool:
    """Send ``ledger.unanswered`` in order until one is refused (kept, with the rest, for another try); whether
    every one was acknowledged."""
    pending, ledger.unanswered = ledger.unanswered, []
    with httpx.Client(base_url=url, verify=TLS, timeout=60) as http:
        for n, items in enumerate(pending):
            if ledger.send(http, scope_id, items) != 201:
                ledger.unanswered = pending[n:]
                return False
    return True


@pytest.mark.slow
def test_a_full_disk_under_embedded_seekdb_answers_store_full_and_loses_nothing(tmp_path: Path) -> None:
    """On a full disk the engine's log stops: the refusal comes after a 10 s statement timeout and, when the commit
    is what timed out, says the outcome is not known (the engine may still commit it): such a batch is sent
    again with the same keys, like a batch a kill left unanswered, and must be stored exactly once."""
    from tests.seekdb_support import new_engine_dir, require_seekdb

    require_seekdb()
    prepared = new_engine_dir(tmp_path, "prepared")
    volume = tmp_path / "volume"
    volume.mkdir()
    store = f"seekdb://{volume / 'engine'}"
    log = tmp_path / "server.log"
    server, url = serve_in_namespace(volume, store, log, f"cp -a {prepared} {volume / 'engine'}")
    # Keeps the namespace, and the tmpfs with the store, for a restart.
    enter = () if os.geteuid() == 0 else ("-U", "--preserve-credentials")
    keeper = subprocess.Popen(["nsenter", "-t", str(server.pid), *enter, "-m", "sleep", "600"])
    seen_by_server = Path(f"/proc/{server.pid}/root") / str(volume).lstrip("/")
    try:
        scope_id = unique("full")
        create_scope(url, scope_id)
        ledger = Ledger()
        with httpx.Client(base_url=url, verify=TLS, timeout=60) as http:
            assert ledger.send(http, scope_id, [item("before", n) for n in range(100)]) == 201
            assert fill(seen_by_server / "filler") > 0
            ready = http.get("/health/ready")
            assert ready.status_code == 503 and ready.json()["reason"] == "store-full", ready.text

            accepted = 0
            while True:
                items = [item(f"full{accepted}", n) for n in range(500)]
                if ledger.send(http, scope_id, items) != 201:
                    break
                accepted += 1
                assert accepted < MOST_BATCHES_ONCE_FULL, "the engine never stopped taking writes on a full disk"
            assert ledger.refused == [507] and ledger.last_refusal is not None, ledger.refused
            error = ledger.last_refusal.json()["error"]
            assert error["code"] == "store-full"
            assert "disk that holds the store is full, and the embedded engine stopped writing" in error["message"]
            if "nothing was written" not in error["message"]:
                assert "whether the write was stored is not known" in error["message"], error["message"]
                ledger.unanswered.append(items)
            ready = http.get("/health/ready")
            assert ready.status_code == 503 and ready.json()["reason"] == "store-full", ready.text

        (seen_by_server / "filler").unlink()
        ledger.refused.clear()
        ledger.unanswered.append([item("after", n) for n in range(500)])
        resumed = send_pending(url, scope_id, ledger)
        if not resumed:  # the engine did not resume by itself: a restart (which does not always help either)
            assert set(ledger.refused) <= {503, 507}, ledger.refused
            server.terminate()
            server.wait(timeout=60)
            server, url = serve_in_namespace(volume, store, log, "", join=keeper.pid)
            ledger.refused.clear()
            resumed = send_pending(url, scope_id, ledger)
        # Whether the engine writes again after a full disk is its own (docs/operations.md: measured, it does not
        # always, even restarted with 100+ MiB free); what was acknowledged must be there either way, once each,
        # and a batch whose outcome was not known is there whole or not at all.
        keys = stored_keys(url, scope_id)
        assert len(keys) == len(set(keys)), "an item was stored twice"
        assert ledger.acknowledged <= set(keys), "an acknowledged item is missing"
        unknown = {entry["idempotency_key"] for items in ledger.unanswered for entry in items}
        assert set(keys) - ledger.acknowledged <= unknown, "an item refused as not written was stored"
        for items in ledger.unanswered:
            batch = {entry["idempotency_key"] for entry in items}
            assert len(batch & set(keys)) in (0, len(batch)), "a batch was stored in part"
        assert resumed or ledger.refused, "writes neither resumed nor were refused"
        log_text = log.read_text()
        assert "event=store.fault cause=disk-full code=store-full" in log_text
        assert "internal-error" not in log_text and "request.failed" not in log_text
    finally:
        stop_process(server)
        keeper.kill()
        keeper.wait()
