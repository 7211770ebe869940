"""Prepare latency over HTTP at N active memories, and the cost of include_receipt.

Run: .venv/bin/python bench/prepare_latency.py [--sizes 10000,100000] [--calls 200]

For each size: a fresh database, N memories batch-imported (500 per call), then ``--calls`` pairs of
sequential prepare calls with one persistent client. Each pair sends the same query once with
include_receipt=false and once with true, alternating which goes first, so both flags see the same
queries, cache state and machine noise.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from _common import (
    SCOPE_ID,
    create_scope,
    describe_target,
    http_client,
    make_corpus,
    make_queries,
    median,
    percentile,
    running_server,
    seed_batches,
    verdict,
)

P50_TARGET_MS = {10_000: 10.0, 100_000: 25.0}
RECEIPT_RATIO_TARGET = 1.05
BATCH_TARGET_PER_S = 5_000.0
WARMUP_PAIRS = 20


@dataclass
class Samples:
    plain_ms: list[float]
    receipt_ms: list[float]
    ready: int  # answers with status "ready" (the rest were "empty")


def prepare_once(client: httpx.Client, query: str, max_bytes: int, receipt: bool) -> tuple[float, bool]:
    body = {"scope_id": SCOPE_ID, "query": query, "max_bytes": max_bytes, "include_receipt": receipt}
    t0 = time.perf_counter()
    response = client.post("/v1/context/prepare", json=body)
    elapsed_ms = (time.perf_counter() - t0) * 1000.0
    if response.status_code != 200:
        raise RuntimeError(f"prepare failed: HTTP {response.status_code} {response.text[:300]}")
    return elapsed_ms, response.json()["status"] == "ready"


def measure(client: httpx.Client, queries: list[str], calls: int, max_bytes: int) -> Samples:
    for i in range(WARMUP_PAIRS):
        prepare_once(client, queries[i % len(queries)], max_bytes, False)
        prepare_once(client, queries[i % len(queries)], max_bytes, True)
    samples = Samples([], [], 0)
    for i in range(calls):
        query = queries[i % len(queries)]
        for receipt in (False, True) if i % 2 == 0 else (True, False):
            elapsed_ms, ready = prepare_once(client, query, max_bytes, receipt)
            (samples.receipt_ms if receipt else samples.plain_ms).append(elapsed_ms)
            if ready and not receipt:
                samples.ready += 1
    return samples


def run_size(size: int, calls: int, max_bytes: int, work: Path) -> bool:
    print(f"\n== {size:,} active memories ==")
    corpus = make_corpus(size)
    with running_server(work / f"prepare-{size}.db", work) as server, http_client(server) as client:
        create_scope(client)
        seeded = seed_batches(client, corpus)
        print(f"seeded {seeded.count:,} memories in {seeded.batches} batch calls, {seeded.seconds:.2f} s")
        ok = verdict("batch import throughput", seeded.per_second, BATCH_TARGET_PER_S, "memories/s", at_least=True)
        samples = measure(client, make_queries(), calls, max_bytes)
    for label, values in (("include_receipt=false", samples.plain_ms), ("include_receipt=true ", samples.receipt_ms)):
        print(
            f"prepare {label}: n={len(values)} p50={median(values):.2f} ms p95={percentile(values, 95):.2f} ms"
            f" max={max(values):.2f} ms"
        )
    print(f"answers with status ready: {samples.ready}/{calls} (the rest matched nothing)")
    target = P50_TARGET_MS.get(size)
    if target is not None:
        ok &= verdict(f"prepare p50 at {size:,}", median(samples.plain_ms), target, "ms", at_least=False)
    else:
        print(f"(no p50 target defined for {size:,} memories)")
    ratio = median(samples.receipt_ms) / median(samples.plain_ms)
    paired = median([r / p for r, p in zip(samples.receipt_ms, samples.plain_ms, strict=True)])
    print(f"median of per-pair ratios (receipt/plain): {paired:.3f}")
    ok &= verdict("receipt p50 ratio (true/false)", ratio, RECEIPT_RATIO_TARGET, "x", at_least=False, digits=3)
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated memory counts")
    parser.add_argument("--calls", type=int, default=200, help="prepare calls per include_receipt value")
    parser.add_argument("--max-bytes", type=int, default=8000)
    args = parser.parse_args()
    print(describe_target())
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    ok = True
    with tempfile.TemporaryDirectory(prefix="pc-bench-") as tmp:
        for size in sizes:
            ok &= run_size(size, args.calls, args.max_bytes, Path(tmp))
    print("\nALL PASS" if ok else "\nSOME TARGETS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
