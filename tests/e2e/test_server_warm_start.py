"""A fresh Server does its one-time set-up before it reports ready, not inside its first requests.

Work done inside a request holds the interpreter lock and stalls every other request of that moment
(``/health/live`` included), so the first requests of a fresh Server must cost about what later ones
cost. Measured as the Server process's CPU time, which a busy machine stretches far less than wall time.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import psutil

from tests.conftest import live_server
from tests.support import TLS

# Without the warm-up the first prepare cost 80-180 ms of the Server's CPU (FastAPI builds every
# router's matching state on first use); with it, about as much as any later one (~5 ms).
FIRST_REQUEST_CPU_LIMIT_S = 0.05


def _process_cpu_s(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def test_first_requests_of_a_fresh_server_cost_what_later_ones_cost(tmp_path: Path) -> None:
    with (
        live_server(tmp_path, fresh_interpreter=True) as live,
        httpx.Client(base_url=live.base_url, timeout=30, verify=TLS) as client,
    ):
        process = psutil.Process(live.process.pid)
        costs: dict[str, float] = {}
        # Two routers far apart in the routing table, each asked for the first time.
        for name, path, body, status in (
            ("prepare", "/v1/context/prepare", {"scope_id": "s:absent", "query": "what changed"}, 404),
            ("scope", "/v1/scopes", {"scope_id": "team:warm", "title": "warm"}, 201),
        ):
            before = _process_cpu_s(process)
            r = client.post(path, json=body)
            costs[name] = _process_cpu_s(process) - before
            assert r.status_code == status, r.text
    slow = {name: f"{cost * 1000:.0f} ms" for name, cost in costs.items() if cost > FIRST_REQUEST_CPU_LIMIT_S}
    assert not slow, f"first requests took this much of the Server's CPU: {slow}"
