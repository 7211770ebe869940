"""A full disk under a SQLite store: 507 store-full with a message naming the cause, the log names it too,
readiness says so, nothing acknowledged is lost, and writes resume once space is freed.

The store lives on a 16 MiB tmpfs mounted in a mount namespace of the Server's own (``unshare -m``, as root; a
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
