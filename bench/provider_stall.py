"""A stalled embedding provider and oversized request bodies: what they cost the rest of the Server.

Run: .venv/bin/python bench/provider_stall.py [--rounds 3] [--concurrent 48] [--timeout 2.0] [--trickle 1.0]

Bodies: a Server without a provider is warmed up and its RSS read (psutil) as "idle"; four clients then
send 100 MB bodies at once, chunked (the Server reads each up to its limit, then answers 413), then four
more with a declared Content-Length (413 before reading); RSS is read again after each wave.

Stall: per round, a fresh Server with the openai-compatible provider (``--timeout``, cool-down 30 s) on the
test suite's fake provider (``tests/embedding_server.py``, a separate process), seeded with 200 memories and
warmed up with ``--concurrent`` x 3 prepares while the provider answers. Then the provider switches to
``trickle``: it sends its answer one byte every ``--trickle`` seconds. ``--concurrent`` prepares (``auto``,
with a Receipt) start at once while one client probes ``/health/live`` and ``/health/ready`` in a loop; then
200 sequential prepares run in the same state.
Figures are per round; the PASS/FAIL lines use the median over rounds.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import psutil  # type: ignore[import-untyped]

from _common import (
    SCOPE_ID,
    create_scope,
    describe_target,
    make_corpus,
    make_queries,
    median,
    percentile,
    running_server,
    seed_batches,
    verdict,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))  # the fake provider and the raw-socket client live with the tests

from tests.embedding_fixture import EmbeddingServer, start_embedding_server  # noqa: E402
from tests.http_raw import chunked, filler, send_until_answered  # noqa: E402

MB = 1024 * 1024
DIM = 64
RSS_TARGET_MB = 20.0
LIVE_P99_TARGET_MS = 50.0
REST_P95_TARGET_MS = 50.0


def rss_mb(pid: int) -> float:
    return float(psutil.Process(pid).memory_info().rss) / MB


def bodies(tmp: Path) -> bool:
    print("\n== oversized bodies (4 concurrent x 100 MB) ==")
    with running_server(tmp / "bodies.db", tmp) as server:
        with httpx.Client(base_url=server.base_url, timeout=60) as client:
            create_scope(client)
            for query in make_queries(20):
                client.post("/v1/context/prepare", json={"scope_id": SCOPE_ID, "query": query})
            limit = int(client.get("/v1/capabilities").json()["limits"]["request_max_bytes"])
        pid = server.process.pid
        time.sleep(0.5)
        idle = rss_mb(pid)
        print(f"request_max_bytes: {limit:,} ({limit / MB:.1f} MiB); idle RSS {idle:.1f} MiB")
        after: dict[str, float] = {}
        for framing in ("chunked", "content-length"):
            statuses: list[int] = []
            seconds: list[float] = []

            def upload(
                framing: str = framing, statuses: list[int] = statuses, seconds: list[float] = seconds
            ) -> None:
                headers = {"content-type": "application/json"}
                if framing == "chunked":
                    headers["transfer-encoding"] = "chunked"
                    body = chunked(100 * MB)
                else:
                    headers["content-length"] = str(100 * MB)
                    body = filler(100 * MB)
                answer = send_until_answered(server.base_url, "POST", "/v1/context/prepare", headers, body)
                statuses.append(answer.status)
                seconds.append(answer.elapsed_s)

            threads = [threading.Thread(target=upload) for _ in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            time.sleep(1.0)
            after[framing] = rss_mb(pid)
            print(
                f"{framing:>14}: statuses {sorted(statuses)}, answered in {max(seconds):.2f} s (slowest),"
                f" RSS after {after[framing]:.1f} MiB ({after[framing] - idle:+.1f} MiB)"
            )
        grown = max(after.values()) - idle
    label = "RSS after four concurrent oversized bodies, above idle"
    return verdict(label, grown, RSS_TARGET_MB, "MiB", at_least=False)


def warm_up(base_url: str, queries: list[str], concurrent: int) -> None:
    """Concurrent prepares while the provider answers: every worker thread has opened its store connection, as
    in a Server that has been running for a while."""

    def prepare(i: int) -> None:
        with httpx.Client(base_url=base_url, timeout=120) as http:
            for j in range(3):
                body = {"scope_id": SCOPE_ID, "query": queries[(i + j) % len(queries)], "include_receipt": True}
                http.post("/v1/context/prepare", json=body).raise_for_status()

    threads = [threading.Thread(target=prepare, args=(i,)) for i in range(concurrent)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def stall_round(tmp: Path, provider: EmbeddingServer, args: argparse.Namespace, n: int) -> dict[str, float]:
    provider.control(mode="answer")
    settings = {
        "POWERCONTEXT_EMBEDDINGS": "openai-compatible",
        "POWERCONTEXT_EMBEDDINGS_BASE_URL": provider.base_url,
        "POWERCONTEXT_EMBEDDINGS_MODEL": "fake-embed",
        "POWERCONTEXT_EMBEDDINGS_DIMENSION": str(DIM),
        "POWERCONTEXT_EMBEDDINGS_TIMEOUT": str(args.timeout),
        "POWERCONTEXT_EMBEDDINGS_COOLDOWN": "30",
    }
    queries = make_queries(60)
    with running_server(tmp / f"stall-{n}.db", tmp, env=settings) as server:
        with httpx.Client(base_url=server.base_url, timeout=120) as client:
            create_scope(client)
            seed_batches(client, make_corpus(200))
        warm_up(server.base_url, queries, args.concurrent)
        provider.control(mode="trickle", trickle_s=args.trickle)
        first: list[float] = []
        fallbacks: set[str] = set()
        barrier = threading.Barrier(args.concurrent + 1)
        lock = threading.Lock()

        def prepare(i: int) -> None:
            with httpx.Client(base_url=server.base_url, timeout=120) as http:
                body = {"scope_id": SCOPE_ID, "query": queries[i % len(queries)], "include_receipt": True}
                barrier.wait()
                started = time.perf_counter()
                r = http.post("/v1/context/prepare", json=body)
                elapsed = time.perf_counter() - started
                groups = r.json()["receipt"]["retrieval"]["searches"] if r.status_code == 200 else []
                with lock:
                    first.append(elapsed)
                    fallbacks.update(g["fallback_reason"] for g in groups if g["family"] == "atomic-memory")

        threads = [threading.Thread(target=prepare, args=(i,)) for i in range(args.concurrent)]
        for thread in threads:
            thread.start()
        live: list[float] = []
        ready: list[float] = []
        with httpx.Client(base_url=server.base_url, timeout=60) as probe:
            barrier.wait()
            while any(thread.is_alive() for thread in threads):
                for path, sink in (("/health/live", live), ("/health/ready", ready)):
                    started = time.perf_counter()
                    probe.get(path).raise_for_status()
                    sink.append(time.perf_counter() - started)
                time.sleep(0.005)
            for thread in threads:
                thread.join()
            rest: list[float] = []
            for i in range(200):
                body = {"scope_id": SCOPE_ID, "query": queries[i % len(queries)], "include_receipt": True}
                started = time.perf_counter()
                r = probe.post("/v1/context/prepare", json=body)
                rest.append(time.perf_counter() - started)
                r.raise_for_status()
        provider.control(mode="answer")
    figures = {
        "first_p50": median(first) * 1000,
        "first_p95": percentile(first, 95) * 1000,
        "first_max": max(first) * 1000,
        "live_p50": median(live) * 1000,
        "live_p99": percentile(live, 99) * 1000,
        "live_max": max(live) * 1000,
        "ready_p99": percentile(ready, 99) * 1000,
        "probes": float(len(live)),
        "rest_p50": median(rest) * 1000,
        "rest_p95": percentile(rest, 95) * 1000,
    }
    print(
        f"round {n}: {args.concurrent} concurrent prepares p50 {figures['first_p50']:.0f} / p95"
        f" {figures['first_p95']:.0f} / max {figures['first_max']:.0f} ms (fallbacks: {sorted(fallbacks)});"
        f" /health/live p50 {figures['live_p50']:.1f} / p99 {figures['live_p99']:.1f} / max"
        f" {figures['live_max']:.1f} ms over {len(live)} probes; /health/ready p99 {figures['ready_p99']:.1f} ms;"
        f" then 200 sequential prepares p50 {figures['rest_p50']:.1f} / p95 {figures['rest_p95']:.1f} ms"
    )
    return figures


def stall(tmp: Path, args: argparse.Namespace) -> bool:
    print(
        f"\n== stalled provider: one byte every {args.trickle:g} s, timeout {args.timeout:g} s,"
        f" {args.concurrent} concurrent prepares, {args.rounds} rounds =="
    )
    with start_embedding_server(DIM) as provider:
        rounds = [stall_round(tmp, provider, args, n) for n in range(1, args.rounds + 1)]

    def med(key: str) -> float:
        return median([r[key] for r in rounds])

    first_target = args.timeout * 1000 + 100
    ok = verdict("/health/live p99 during the stall", med("live_p99"), LIVE_P99_TARGET_MS, "ms", at_least=False)
    ok &= verdict("first concurrent prepares p95", med("first_p95"), first_target, "ms", at_least=False)
    ok &= verdict("later prepares p95", med("rest_p95"), REST_P95_TARGET_MS, "ms", at_least=False)
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrent", type=int, default=48)
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--trickle", type=float, default=1.0)
    parser.add_argument("--skip-bodies", action="store_true")
    args = parser.parse_args()
    print(describe_target())
    with tempfile.TemporaryDirectory(prefix="pc-stall-") as tmp:
        ok = True if args.skip_bodies else bodies(Path(tmp))
        ok &= stall(Path(tmp), args)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
