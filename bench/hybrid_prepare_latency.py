"""Hybrid prepare latency with the local embedding model, against fts-only on the same data, in one run.

Run: .venv/bin/python bench/hybrid_prepare_latency.py [--size 10000] [--calls 200]

Needs the ``embeddings`` extra. One database is seeded once through the batch endpoint with the local
model configured (so every memory is embedded on write) and cached under bench/results. Then two
Servers run on copies of it: one with ``POWERCONTEXT_EMBEDDINGS=local`` (prepare's ``auto`` runs hybrid,
including the query embedding) and one without a provider (fts). Calls alternate between them.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import httpx

from _common import (
    RESULTS_DIR,
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

HYBRID_P50_TARGET_MS = 40.0
LOCAL = {"POWERCONTEXT_EMBEDDINGS": "local", "POWERCONTEXT_LOG_LEVEL": "warning"}
PLAIN = {"POWERCONTEXT_EMBEDDINGS": "none", "POWERCONTEXT_LOG_LEVEL": "warning"}
WARMUP = 20


def seeded_db(size: int, work: Path) -> Path:
    cached = RESULTS_DIR / f"hybrid-{size}.db"
    if cached.exists():
        print(f"using cached {cached.name}")
        return cached
    RESULTS_DIR.mkdir(exist_ok=True)
    building = work / "building.db"
    with running_server(building, work, env=LOCAL, ready_timeout=120) as server, http_client(server) as client:
        create_scope(client)
        t0 = time.perf_counter()
        seeded = seed_batches(client, make_corpus(size), batch_size=250)
        print(f"seeded and embedded {seeded.count:,} memories in {time.perf_counter() - t0:.1f} s")
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{building}{suffix}").exists():
            shutil.copy(f"{building}{suffix}", f"{cached}{suffix}")
    return cached


def prepare(client: httpx.Client, query: str) -> tuple[float, str]:
    body = {"scope_id": SCOPE_ID, "query": query, "include_receipt": True}
    t0 = time.perf_counter()
    response = client.post("/v1/context/prepare", json=body)
    elapsed = (time.perf_counter() - t0) * 1000.0
    response.raise_for_status()
    modes = {g["mode"] for g in response.json()["receipt"]["retrieval"]["searches"] if g["family"] == "atomic-memory"}
    return elapsed, "/".join(sorted(modes))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    print(describe_target())
    queries = make_queries()
    with tempfile.TemporaryDirectory(prefix="pc-hybrid-") as tmp:
        work = Path(tmp)
        source = seeded_db(args.size, work)
        for name in ("hybrid", "fts"):
            for suffix in ("", "-wal", "-shm"):
                if Path(f"{source}{suffix}").exists():
                    shutil.copy(f"{source}{suffix}", work / f"{name}.db{suffix}")
        with (
            running_server(work / "hybrid.db", work, env=LOCAL, ready_timeout=120) as hybrid_server,
            running_server(work / "fts.db", work, env=PLAIN) as fts_server,
            http_client(hybrid_server) as hybrid,
            http_client(fts_server) as fts,
        ):
            for i in range(WARMUP):
                prepare(hybrid, queries[i % len(queries)])
                prepare(fts, queries[i % len(queries)])
            samples: dict[str, list[float]] = {"hybrid": [], "fts": []}
            seen_modes: dict[str, set[str]] = {"hybrid": set(), "fts": set()}
            for i in range(args.calls):
                query = queries[i % len(queries)]
                order = (("hybrid", hybrid), ("fts", fts)) if i % 2 == 0 else (("fts", fts), ("hybrid", hybrid))
                for name, client in order:
                    elapsed, modes = prepare(client, query)
                    samples[name].append(elapsed)
                    seen_modes[name].add(modes)
    print(f"\n{args.size:,} memories, {args.calls} prepare calls per Server, alternating, include_receipt=true")
    for name, values in samples.items():
        print(
            f"{name:>6}: p50 {median(values):6.2f} ms  p95 {percentile(values, 95):6.2f} ms"
            f"  (modes in Receipts: {', '.join(sorted(seen_modes[name]))})"
        )
    ok = seen_modes["hybrid"] == {"hybrid"} and seen_modes["fts"] == {"fts"}
    if not ok:
        print("FAIL  the Servers did not run the modes they were configured for")
    ok &= verdict(
        "hybrid prepare p50 (local model, query embedding included)",
        median(samples["hybrid"]),
        HYBRID_P50_TARGET_MS,
        "ms",
        at_least=False,
    )
    # Issue 11's held-out target, measured here on the benchmark corpus: hybrid costs at most twice fts.
    ok &= verdict(
        "hybrid / fts prepare p50", median(samples["hybrid"]) / median(samples["fts"]), 2.0, "x", at_least=False
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
