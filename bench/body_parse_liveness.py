"""Liveness while the Server parses maximum-size batches: the event loop must not wait for them.

Run: .venv/bin/python bench/body_parse_liveness.py [--rounds 3] [--parallel 4]

Per round, a fresh Server (real uvicorn process, SQLite). The client builds the largest valid batch create
(500 Atomic Memories with every field at its maximum, written with ASCII escapes and four-space indentation:
the route's published limit, ``limits.route_max_bytes``), then ``--parallel`` sender processes post it at once
to a Scope that does not exist, so the Server reads, parses and validates each body in full and answers 404
without writing. Meanwhile this process asks ``GET /health/live`` in a loop (one keep-alive connection) and
reads the Server's RSS (psutil) after each answer. Senders are separate processes so that their uploads do not
hold this process's GIL and inflate the probe's timings; each is started, connected and warm before all four
are released at once, so the window measures the Server reading and parsing, not client processes starting.

Before the senders, the same client posts one largest batch alone twice and times each end to end (the
throughput of one body: the first also pays whatever a first large body costs the Server). ``--fresh`` skips
them, so the four batches are the first requests the Server handles after ``GET /v1/capabilities``.

Prints, per round, the probe's p50 / max latency with nothing else running (this machine's floor), its
p50 / p99 / max latency while the bodies were in flight, the senders' time, one batch's time alone,
and RSS idle / peak / after; then the medians over rounds and a PASS/FAIL against the 50 ms target (the
probe's max latency).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psutil  # type: ignore[import-untyped]

from _common import describe_target, median, percentile, running_server, verdict

MB = 1024 * 1024
LIVE_MAX_TARGET_MS = 50.0
BATCH_ROUTE = "POST /v1/scopes/{scope_id}/atomic-memory/batch"
JSON = {"content-type": "application/json"}


def largest_batch() -> bytes:
    item = {
        "text": "\x07" * 8000,  # 8,000 UTF-8 bytes, each written as a six-byte \u0007
        "kind": "constraint",
        "tags": ["\U0001d11e" * 64] * 32,  # each character a twelve-byte surrogate pair
        "idempotency_key": "\\" * 128,
    }
    return json.dumps({"items": [item] * 500}, ensure_ascii=True, indent=4).encode("ascii")


def send(
    base_url: str,
    body: bytes,
    index: int,
    ready: Any,
    go: Any,
    results: multiprocessing.Queue[tuple[int, int, float]],
) -> None:
    url = f"{base_url}/v1/scopes/absent-{index}/atomic-memory/batch"
    with httpx.Client(timeout=300) as client:
        # Connected and warm before the start, so the window measures the Server, not processes starting.
        client.get(f"{base_url}/health/live")
        ready.release()
        go.wait()
        started = time.perf_counter()
        r = client.post(url, content=body, headers={"content-type": "application/json"})
    results.put((index, r.status_code, time.perf_counter() - started))


def one_round(tmp: Path, body: bytes, parallel: int, number: int, fresh: bool) -> dict[str, float]:
    with running_server(tmp / f"liveness-{number}.db", tmp) as server:
        process = psutil.Process(server.process.pid)
        with httpx.Client(base_url=server.base_url, timeout=30) as probe:
            limits = probe.get("/v1/capabilities").json()["limits"]
            # A Server from before per-route limits (for a baseline) publishes only the largest.
            limit = limits.get("route_max_bytes", {}).get(BATCH_ROUTE, limits["request_max_bytes"])
            assert len(body) <= limit, (len(body), limit)
            quiet: list[float] = []
            for _ in range(100):  # the same probe with nothing else running: this machine's floor
                before = time.perf_counter()
                probe.get("/health/live")
                quiet.append((time.perf_counter() - before) * 1000.0)
                time.sleep(0.005)
            idle = process.memory_info().rss / MB
            single: list[float] = []
            # One largest batch alone, end to end: the first may start a parser, the second not.
            for _ in range(0 if fresh else 2):
                before = time.perf_counter()
                r = probe.post("/v1/scopes/absent/atomic-memory/batch", content=body, headers=JSON, timeout=300)
                single.append(time.perf_counter() - before)
                assert r.status_code == 404, r.text[:300]
            context = multiprocessing.get_context("fork")  # the senders share the parent's copy of the body
            results: multiprocessing.Queue[tuple[int, int, float]] = context.Queue()
            ready, go = context.Semaphore(0), context.Event()
            senders = [
                context.Process(target=send, args=(server.base_url, body, i, ready, go, results))
                for i in range(parallel)
            ]
            for sender in senders:
                sender.start()
            for _ in senders:
                ready.acquire()
            time.sleep(0.2)  # the senders' own start-up settles
            started = time.perf_counter()
            go.set()
            latencies: list[float] = []
            peak = idle
            while any(sender.is_alive() for sender in senders):
                before = time.perf_counter()
                assert probe.get("/health/live").status_code == 200
                latencies.append((time.perf_counter() - before) * 1000.0)
                peak = max(peak, process.memory_info().rss / MB)
                time.sleep(0.005)
            elapsed = time.perf_counter() - started
            answers = sorted(results.get(timeout=5) for _ in senders)
            after = process.memory_info().rss / MB
    statuses = {status for _, status, _ in answers}
    assert statuses == {404}, f"every batch is parsed whole and answered 404 (no such Scope), got {statuses}"
    figures = {
        "quiet_p50": percentile(quiet, 50),
        "quiet_max": max(quiet),
        "p50": percentile(latencies, 50),
        "p99": percentile(latencies, 99),
        "max": max(latencies),
        "probes": float(len(latencies)),
        "senders_s": elapsed,
        "idle": idle,
        "peak": peak,
        "after": after,
    }
    if single:
        figures |= {"single_cold_s": single[0], "single_warm_s": single[1]}
    print(
        f"round {number}: quiet /health/live p50 {figures['quiet_p50']:.1f} ms, max {figures['quiet_max']:.1f} ms; "
        f"while parsing p50 {figures['p50']:.1f} ms, p99 {figures['p99']:.1f} ms, "
        f"max {figures['max']:.1f} ms over {len(latencies)} probes; {parallel} batches answered in "
        f"{elapsed:.1f} s; RSS idle {idle:.0f} MiB, peak {peak:.0f} MiB, after {after:.0f} MiB"
        + (f"; one batch alone {single[0]:.2f} s (first), {single[1]:.2f} s (second)" if single else "")
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--fresh", action="store_true", help="no single batch before the parallel ones")
    args = parser.parse_args()
    print(describe_target())
    body = largest_batch()
    print(f"body: {len(body):,} bytes ({len(body) / MB:.1f} MiB), {args.parallel} in parallel, {args.rounds} rounds")
    with tempfile.TemporaryDirectory() as tmp:
        rounds = [one_round(Path(tmp), body, args.parallel, n + 1, args.fresh) for n in range(args.rounds)]
    print("\nmedians over rounds:")
    keys = (("quiet_p50", "ms"), ("quiet_max", "ms"), ("p50", "ms"), ("p99", "ms"), ("max", "ms"), ("senders_s", "s"))
    for key, unit in keys:
        print(f"  /health/live {key}: {median([r[key] for r in rounds]):.1f} {unit}")
    if not args.fresh:
        for key in ("single_cold_s", "single_warm_s"):
            print(f"  one largest batch alone, {key}: {median([r[key] for r in rounds]):.2f} s")
    for key in ("idle", "peak", "after"):
        print(f"  RSS {key}: {median([r[key] for r in rounds]):.0f} MiB")
    verdict(
        "/health/live max latency while parsing",
        median([r["max"] for r in rounds]),
        LIVE_MAX_TARGET_MS,
        "ms",
        at_least=False,
        digits=1,
    )


if __name__ == "__main__":
    main()
