"""A fresh Server does its one-time set-up before it reports ready, not inside its first requests.

Work done inside a request holds the interpreter lock and stalls every other request of that moment
(``/health/live`` included), so the first requests of a fresh Server must cost about what later ones
cost. Measured as the Server process's CPU time, which a busy machine stretches far less than wall time.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from tests.conftest import live_server
from tests.support import TLS

# Without the warm-up the first prepare cost 80-180 ms of the Server's CPU (FastAPI builds every
# router's matching state on first use); with it, about as much as any later one (~5 ms).
FIRST_REQUEST_CPU_LIMIT_S = 0.05


def _process_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of proc(5); the split above starts at field 3.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process CPU time from /proc")
def test_first_requests_of_a_fresh_server_cost_what_later_ones_cost(tmp_path: Path) -> None:
    with live_server(tmp_path) as live, httpx.Client(base_url=live.base_url, timeout=30, verify=TLS) as client:
        pid = live.process.pid
        costs: dict[str, float] = {}
        # Two routers far apart in the routing table, each asked for the first time.
        for name, path, body, status in (
            ("prepare", "/v1/context/prepare", {"scope_id": "s:absent", "query": "what changed"}, 404),
            ("scope", "/v1/scopes", {"scope_id": "team:warm", "title": "warm"}, 201),
        ):
            before = _process_cpu_s(pid)
            r = client.post(path, json=body)
            costs[name] = _process_cpu_s(pid) - before
            assert r.status_code == status, r.text
    slow = {name: f"{cost * 1000:.0f} ms" for name, cost in costs.items() if cost > FIRST_REQUEST_CPU_LIMIT_S}
    assert not slow, f"first requests took this much of the Server's CPU: {slow}"
