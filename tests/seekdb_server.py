"""A seekdb server process (the engine binary shipped in the ``pylibseekdb`` wheel) for ``oceanbase://`` tests.

The server binds every interface, whatever it is told, so it is only ever started inside a network
namespace that the test creates (``run_in_network_namespace``), never on the host network. Inside,
the namespace needs loopback up and one more interface with an address: with only ``lo`` the engine
fails at start with ``OB_ERR_UNEXPECTED`` in "init sql expr static var" (it looks up a local,
non-loopback IPv4 address; measured: a veth pair with an address is enough).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tests.support import stop_process

NAMESPACE_SETUP = (
    "ip link set lo up"
    " && ip link add pcveth0 type veth peer name pcveth1"
    " && ip addr add 10.213.0.1/24 dev pcveth0"
    " && ip link set pcveth0 up && ip link set pcveth1 up"
)
IN_NAMESPACE = "POWERCONTEXT_TEST_NETNS"
PORT = 2881
READY_TIMEOUT_S = 240.0


def namespace_unavailable() -> str | None:
    """None when this process can create a network namespace with the interfaces the engine needs."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "unshare or ip (iproute2) is not installed"
    for command in (["unshare", "-n", "sh", "-c", NAMESPACE_SETUP], ["unshare", "-rn", "sh", "-c", NAMESPACE_SETUP]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
        if done.returncode == 0:
            return None
    return f"cannot create a network namespace with a veth pair: {done.stderr.strip() or done.returncode}"


def namespace_command(argv: list[str]) -> list[str]:
    """``argv`` run inside a new network namespace (root's own, or a user namespace's when not root)."""
    script = f'{NAMESPACE_SETUP} && exec "$@"'
    unshare = ["unshare", "-n"] if os.geteuid() == 0 else ["unshare", "-rn"]
    return [*unshare, "sh", "-c", script, "sh", *argv]


def engine_binary() -> Path:
    import pylibseekdb

    return Path(pylibseekdb.__file__).parent / "seekdb"


@contextlib.contextmanager
def seekdb_server(base: Path) -> Iterator[str]:
    """A seekdb server on 127.0.0.1:2881 of the current (namespaced) network; yields its ``oceanbase://`` URL
    for database ``powercontext`` as ``root`` (no password: nothing outside the namespace can reach it)."""
    if os.environ.get(IN_NAMESPACE) != "1":
        raise RuntimeError("a seekdb server binds every interface: start it only inside a test network namespace")
    import pymysql

    base.mkdir(parents=True, exist_ok=True)
    log = (base / "seekdb-stdout.log").open("wb")
    process = subprocess.Popen(
        [
            str(engine_binary()),
            f"--base-dir={base}",
            "--nodaemon",
            "--port",
            str(PORT),
            "--parameter",
            "memory_budget=1G",
            "--parameter",
            "log_disk_size=2G",
        ],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
    )
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"seekdb server exited with {process.returncode}; see {base / 'log'}")
            try:
                pymysql.connect(host="127.0.0.1", port=PORT, user="root", connect_timeout=2).close()
                break
            except pymysql.MySQLError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"seekdb server not ready after {READY_TIMEOUT_S:.0f} s") from None
                time.sleep(1.0)
        yield f"oceanbase://root@127.0.0.1:{PORT}/powercontext"
    finally:
        stop_process(process, 60)
        log.close()


if __name__ == "__main__":  # manual check: python -m tests.seekdb_server (starts its own namespace)
    if os.environ.get(IN_NAMESPACE) != "1":
        env = os.environ | {IN_NAMESPACE: "1"}
        sys.exit(subprocess.run(namespace_command([sys.executable, "-m", "tests.seekdb_server"]), env=env).returncode)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp, seekdb_server(Path(tmp)) as url:
        print("ready:", url)
