"""``oceanbase://`` against a real seekdb server: two Server processes × 16 concurrent writers each, a third one
SIGKILLed during a 500-memory batch (the batch is there whole or not at all), and extraction: each Source
extracted once by two Servers, and a killed Server's lease expiring to the next one.

The seekdb server binds every interface whatever it is told, so this test creates a network
namespace (loopback and a veth pair, nothing routed outside) and runs ``seekdb_server_cases.py``
there with pytest: the engine, both Servers and the writers all live inside it.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.ci import unavailable
from tests.conftest import REPO_ROOT
from tests.seekdb_server import IN_NAMESPACE, namespace_command, namespace_unavailable
from tests.seekdb_support import require_seekdb


def test_servers_on_one_seekdb_server_lose_no_write_conflict_exactly_and_survive_a_kill() -> None:
    require_seekdb()  # the engine binary comes with the embedded engine's wheel
    reason = namespace_unavailable()
    if reason is not None:
        message = f"skipped: seekdb server needs a network namespace: {reason}"
        print(message)
        unavailable(message)
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")} | {IN_NAMESPACE: "1"}
    cases = "tests/e2e/seekdb_server_cases.py"
    done = subprocess.run(
        namespace_command([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", cases]),
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    report = done.stdout[-4000:] + done.stderr[-2000:]
    assert done.returncode == 0, report
    assert "6 passed" in done.stdout, report
