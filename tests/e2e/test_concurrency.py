"""16 concurrent HTTP writers against the server subprocess: no errors, no lost or extra writes."""

from __future__ import annotations

import threading
from collections.abc import Callable

import httpx
import pytest

from tests.conftest import LiveServer
from tests.support import Api, count_artifacts

WRITERS = 16
PER_WRITER = 200


@pytest.mark.slow
def test_concurrent_writers(api: Api, server: LiveServer) -> None:
    sid = api.new_scope()
    barrier = threading.Barrier(WRITERS)
    failures: list[str] = []
    ids: list[list[str]] = [[] for _ in range(WRITERS)]

    def writer(n: int) -> None:
        with httpx.Client(base_url=server.base_url, timeout=60.0) as http:
            barrier.wait()
            for i in range(PER_WRITER):
                try:
                    r = http.post(
                        f"/v1/scopes/{sid}/atomic-memory",
                        json={"text": f"concurrencyword writer {n} item {i}", "kind": "fact"},
                    )
                except httpx.HTTPError as exc:
                    failures.append(f"writer {n} item {i}: {type(exc).__name__}")
                    continue
                if r.status_code != 201:
                    failures.append(f"writer {n} item {i}: {r.status_code} {r.text[:200]}")
                else:
                    ids[n].append(r.json()["artifact_address"]["artifact"]["artifact_id"])

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)
    assert failures == []
    all_ids = [i for per in ids for i in per]
    assert len(all_ids) == WRITERS * PER_WRITER
    assert len(set(all_ids)) == WRITERS * PER_WRITER
    assert count_artifacts(server.db_path, sid) == WRITERS * PER_WRITER
    # Every write is also readable and searchable through the server.
    sample = api.hit_ids(sid, "concurrencyword writer 7 item 199")
    assert sample and sample[0] in ids[7]


@pytest.mark.slow
def test_prepares_during_writes_stay_consistent(api: Api, server: LiveServer) -> None:
    """Readers never block on or observe a half-written batch: every prepare is a valid answer."""
    from tests.support import FOUR_KEYS, parse_fragments

    sid = api.new_scope()
    api.add(sid, "mixword seed memory", "fact")
    stop = threading.Event()
    failures: list[str] = []

    def write() -> None:
        with httpx.Client(base_url=server.base_url, timeout=60.0) as http:
            n = 0
            while not stop.is_set():
                items = [{"text": f"mixword batch {n} item {i}", "kind": "fact"} for i in range(20)]
                r = http.post(f"/v1/scopes/{sid}/atomic-memory/batch", json={"items": items})
                if r.status_code != 201:
                    failures.append(f"write {r.status_code}")
                n += 1

    def read() -> None:
        with httpx.Client(base_url=server.base_url, timeout=60.0) as http:
            for _ in range(40):
                r = http.post(
                    "/v1/context/prepare", json={"scope_id": sid, "query": "mixword", "include_receipt": True}
                )
                if r.status_code != 200:
                    failures.append(f"prepare {r.status_code}")
                    continue
                body = r.json()
                if set(body) != FOUR_KEYS | {"receipt"}:
                    failures.append("receipt missing")
                    continue
                if body["status"] != "ready":  # every memory holds the query's word: a search found none of them
                    failures.append(f"prepare {body['status']}")
                    continue
                cited = [f.address for f in parse_fragments(body["content"])]
                if cited != [s["artifact_address"] for s in body["receipt"]["selected"]]:
                    failures.append("receipt disagrees with content")

    def recorded(work: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:  # an exception in a thread would not fail the test by itself
            try:
                work()
            except Exception as exc:  # any error is a failure like the others
                failures.append(repr(exc))

        return run

    writers = [threading.Thread(target=recorded(write)) for _ in range(2)]
    readers = [threading.Thread(target=recorded(read)) for _ in range(4)]
    for t in writers + readers:
        t.start()
    for t in readers:
        t.join(timeout=120)
    stop.set()
    for t in writers:
        t.join(timeout=60)
    assert failures == []
    assert (count_artifacts(server.db_path, sid) - 1) % 20 == 0  # only whole batches landed
