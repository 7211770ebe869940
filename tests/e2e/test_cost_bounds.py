"""One prepare's cost is bounded whatever it asks (issue 37): how many Scopes it searches, how many terms each
search ranks, and how many heavy prepares run at once (the rest wait within their deadline, else ``429``).

Real Server subprocesses on loopback; expectations come from the documented bounds (docs/operations.md).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import LiveServer, live_server
from tests.support import TLS, Api, unique

MAX_SEARCHED_SCOPES = 16  # docs/operations.md, "Cost bounds"


def _referencing(api: Api, count: int) -> tuple[str, list[str]]:
    refs = []
    for i in range(count):
        ref = api.new_scope(prefix=f"fan{i:02d}")
        api.add(ref, f"Beacon {i} marks the harbour gate for tug number {i}", kind="fact")
        refs.append(ref)
    return api.new_scope(references=refs, prefix="fan-root"), refs


def _searches(body: dict[str, Any], family: str) -> int:
    groups = body["receipt"]["retrieval"]["searches"]
    return sum(g["count"] for g in groups if g["family"] == family and g["round"] == 0)


def test_a_prepare_searches_at_most_sixteen_scopes_in_reference_order(server: LiveServer, api: Api) -> None:
    root, refs = _referencing(api, 20)
    response = api.prepare(root, "beacon harbour gate tug", max_bytes=32768, include_receipt=True)
    assert response.status_code == 200, response.text
    body = response.json()
    assert _searches(body, "atomic-memory") == MAX_SEARCHED_SCOPES
    cited = {item["artifact_address"]["scope_id"] for item in body["receipt"]["selected"]}
    assert cited and cited <= {root, *refs[: MAX_SEARCHED_SCOPES - 1]}
    # A Scope with few references is searched whole, as before.
    small = api.new_scope(references=refs[-2:], prefix="fan-small")
    assert _searches(api.prepare(small, "beacon", include_receipt=True).json(), "atomic-memory") == 3


def test_heavy_prepares_beyond_the_limit_get_429_with_retry_after(tmp_path: Path) -> None:
    """With a 1 ms prepare deadline no heavy prepare can wait for another: concurrent ones are refused at once
    with the stable code and Retry-After, while a light prepare alongside them is answered."""
    with live_server(tmp_path, {"POWERCONTEXT_PREPARE_DEADLINE_MS": "1"}) as server:
        api = Api(server.base_url)
        root, _ = _referencing(api, 12)
        light = api.new_scope(prefix="light")
        api.add(light, "Beacon notes for the light Scope", kind="fact")
        body = {"scope_id": root, "query": "beacon harbour gate tug " * 50, "max_bytes": 32768}

        def heavy(_: int) -> httpx.Response:
            with httpx.Client(base_url=server.base_url, timeout=60, verify=TLS) as client:
                return client.post("/v1/context/prepare", json=body)

        refused: list[httpx.Response] = []
        for _ in range(5):  # the refusals need overlap; a few bursts make that certain on a busy machine
            with ThreadPoolExecutor(8) as pool:
                answers = list(pool.map(heavy, range(8)))
                light_answer = api.prepare(light, "beacon notes")
            assert {a.status_code for a in answers} <= {200, 429}
            assert light_answer.status_code == 200
            refused = [a for a in answers if a.status_code == 429]
            if refused:
                break
        assert refused, "no heavy prepare was refused"
        error = json.loads(refused[0].content)["error"]
        assert error["code"] == "prepare-busy" and "retry after" in error["message"]
        assert refused[0].headers["retry-after"] == "1"
        api.close()


def test_the_admission_gate_runs_light_prepares_at_once_and_bounds_heavy_ones() -> None:
    import threading
    import time

    from powercontext.recall.admission import LIGHT_SCOPES, HeavyPrepareGate, PrepareBusy

    gate = HeavyPrepareGate(slots=1)
    inside = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with gate.admitted(LIGHT_SCOPES + 1, 5.0):
            inside.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    assert inside.wait(5)
    with gate.admitted(LIGHT_SCOPES, 0.0):  # light: never waits
        pass
    started = time.monotonic()
    try:
        with gate.admitted(LIGHT_SCOPES + 1, 0.05):
            raise AssertionError("admitted while the only slot was taken")
    except PrepareBusy as exc:
        assert exc.status == 429 and exc.headers["Retry-After"] == "1"
    assert time.monotonic() - started < 1.0
    release.set()
    holder.join(5)
    with gate.admitted(LIGHT_SCOPES + 1, 1.0):  # the slot is free again
        pass
    assert unique("x")
