"""A provider that trickles its answer (a real process sending one byte every half second) must cost one
deadline, not one per request, and never hold up the probes. Each case runs its own Server, so the breaker
starts closed."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import LiveServer, live_server
from tests.embedding_fixture import EmbeddingServer, start_embedding_server
from tests.support import Api

DIM = 32
TIMEOUT_S = 1.0
TRICKLE_S = 0.5  # each byte arrives well within the timeout: only a deadline on the whole call trips
CONCURRENT = 48
MEMORY_ONLY = {"sections": [{"family": "memory", "limit": 8}]}


@pytest.fixture(scope="module")
def provider() -> Iterator[EmbeddingServer]:
    with start_embedding_server(DIM) as server:
        yield server


@pytest.fixture
def stalled_server(tmp_path: Path, provider: EmbeddingServer) -> Iterator[LiveServer]:
    provider.control(mode="answer")
    settings = {
        "POWERCONTEXT_EMBEDDINGS": "openai-compatible",
        "POWERCONTEXT_EMBEDDINGS_BASE_URL": provider.base_url,
        "POWERCONTEXT_EMBEDDINGS_MODEL": "fake-embed",
        "POWERCONTEXT_EMBEDDINGS_DIMENSION": str(DIM),
        "POWERCONTEXT_EMBEDDINGS_TIMEOUT": str(TIMEOUT_S),
        "POWERCONTEXT_EMBEDDINGS_COOLDOWN": "30",
    }
    with live_server(tmp_path, settings) as live:
        yield live
    provider.control(mode="answer")


def atomic_groups(body: dict[str, Any]) -> list[tuple[str, str]]:
    searches = body["receipt"]["retrieval"]["searches"]
    return [(g["mode"], g["fallback_reason"]) for g in searches if g["family"] == "atomic-memory"]


def timed_prepare(http: httpx.Client, scope_id: str) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    r = http.post(
        "/v1/context/prepare",
        json={"scope_id": scope_id, "query": "ledger", "include_receipt": True, "assembly": MEMORY_ONLY},
    )
    elapsed = time.perf_counter() - started
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return elapsed, body


@pytest.mark.timed
def test_a_write_against_a_trickling_provider_takes_one_deadline(
    stalled_server: LiveServer, provider: EmbeddingServer
) -> None:
    api = Api(stalled_server.base_url)
    scope_id = api.new_scope()
    provider.control(mode="trickle", trickle_s=TRICKLE_S)
    started = time.perf_counter()
    r = api.http.post(f"/v1/scopes/{scope_id}/atomic-memory", json={"text": "the ledger closes", "kind": "fact"})
    elapsed = time.perf_counter() - started
    assert r.status_code == 201, r.text
    assert elapsed < TIMEOUT_S + 0.5, elapsed
    # Stored without its vector, and found by fts.
    hits = api.search(scope_id, "ledger").json()
    assert (hits["mode"], hits["fallback_reason"]) == ("fts", "inference_timeout")
    assert [h["text"] for h in hits["hits"]] == ["the ledger closes"]
    # The next write does not try the provider again during the cool-down.
    before = provider.stats()["requests"]
    started = time.perf_counter()
    assert api.add(scope_id, "the ledger reopens")["text"] == "the ledger reopens"
    assert time.perf_counter() - started < 0.5
    assert provider.stats()["requests"] == before
    api.close()


@pytest.mark.timed
def test_concurrent_prepares_against_a_trickling_provider_leave_the_probes_fast(
    stalled_server: LiveServer, provider: EmbeddingServer
) -> None:
    api = Api(stalled_server.base_url)
    scope_id = api.new_scope()
    api.add(scope_id, "the ledger settles nightly", kind="fact")
    provider.control(mode="trickle", trickle_s=TRICKLE_S)
    results: list[tuple[float, dict[str, Any]]] = []
    lock = threading.Lock()
    gate = threading.Barrier(CONCURRENT + 1)

    def prepare() -> None:
        with httpx.Client(base_url=stalled_server.base_url, timeout=30) as http:
            gate.wait()
            outcome = timed_prepare(http, scope_id)
            with lock:
                results.append(outcome)

    threads = [threading.Thread(target=prepare) for _ in range(CONCURRENT)]
    for thread in threads:
        thread.start()
    gate.wait()
    probes: list[tuple[str, int, float]] = []
    with httpx.Client(base_url=stalled_server.base_url, timeout=10) as probe:
        while any(thread.is_alive() for thread in threads):
            for path in ("/health/live", "/health/ready"):
                started = time.perf_counter()
                status = probe.get(path).status_code
                probes.append((path, status, time.perf_counter() - started))
            time.sleep(0.05)
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == CONCURRENT
    assert len(probes) >= 4  # the prepares were in flight long enough to be probed
    assert {status for _, status, _ in probes} == {200}
    slowest = max(elapsed for _, _, elapsed in probes)
    assert slowest < 1.0, f"a probe took {slowest:.3f} s"
    # No prepare waited on the provider past its deadline (plus queueing for a worker thread), and every
    # one reports the class it observed or learned from the breaker.
    assert max(elapsed for elapsed, _ in results) < TIMEOUT_S + 2.0
    assert {tuple(atomic_groups(body)) for _, body in results} == {(("fts", "inference_timeout"),)}
    assert all("the ledger settles nightly" in body["content"] for _, body in results)
    # Afterwards prepares fall back at once, without calling the provider.
    before = provider.stats()["requests"]
    with httpx.Client(base_url=stalled_server.base_url, timeout=30) as http:
        for _ in range(5):
            elapsed, body = timed_prepare(http, scope_id)
            assert elapsed < 0.5, elapsed
            assert atomic_groups(body) == [("fts", "inference_timeout")]
    assert provider.stats()["requests"] == before
    api.close()
