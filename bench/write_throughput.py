"""Write throughput over HTTP: sequential single creates, then batch import.

Run: .venv/bin/python bench/write_throughput.py [--creates 2000] [--batch-total 50000] [--batch-size 500]

One fresh database and one persistent client; no embedding provider unless ``POWERCONTEXT_EMBEDDINGS`` is set.
Single creates go into one Scope, then the batch import into a second Scope of the same database (so it starts
non-empty, as it would in use).
Request bodies are built before timing; the figures are client-side wall time of the HTTP calls.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx

from _common import (
    BATCH_SIZE,
    create_scope,
    describe_target,
    http_client,
    make_corpus,
    median,
    percentile,
    running_server,
    seed_batches,
    verdict,
)

SINGLE_TARGET_PER_S = 300.0
BATCH_TARGET_PER_S = 5_000.0


def single_creates(client: httpx.Client, scope_id: str, count: int) -> list[float]:
    """Seconds per create, ``count`` sequential calls."""
    path = f"/v1/scopes/{scope_id}/atomic-memory"
    headers = {"content-type": "application/json"}
    bodies = [json.dumps(item).encode("utf-8") for item in make_corpus(count, seed=1)]
    durations: list[float] = []
    for body in bodies:
        t0 = time.perf_counter()
        response = client.post(path, content=body, headers=headers)
        durations.append(time.perf_counter() - t0)
        if response.status_code != 201:
            raise RuntimeError(f"create failed: HTTP {response.status_code} {response.text[:300]}")
    return durations


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--creates", type=int, default=2000)
    parser.add_argument("--batch-total", type=int, default=50_000)
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE)
    args = parser.parse_args()
    print(describe_target())
    corpus = make_corpus(args.batch_total, seed=2)
    with tempfile.TemporaryDirectory(prefix="pc-bench-") as tmp:
        work = Path(tmp)
        # Full-text writes, as the target is named for: with the local model installed the Server would otherwise
        # embed every create (~23 ms each on this machine). POWERCONTEXT_EMBEDDINGS set by the caller wins.
        embeddings = os.environ.get("POWERCONTEXT_EMBEDDINGS") or "none"
        print(f"embeddings: {embeddings}")
        env = {"POWERCONTEXT_EMBEDDINGS": embeddings}
        with running_server(work / "write.db", work, env=env) as server, http_client(server) as client:
            create_scope(client, "bench-singles")
            create_scope(client, "bench-batch")
            durations = single_creates(client, "bench-singles", args.creates)
            seeded = seed_batches(client, corpus, "bench-batch", args.batch_size)
    ms = [d * 1000.0 for d in durations]
    singles_per_s = len(durations) / sum(durations)
    print(
        f"single creates: {len(durations):,} in {sum(durations):.2f} s;"
        f" per call p50={median(ms):.2f} ms p95={percentile(ms, 95):.2f} ms max={max(ms):.2f} ms"
    )
    print(
        f"batch import: {seeded.count:,} memories in {seeded.batches} calls of {args.batch_size},"
        f" {seeded.seconds:.2f} s"
    )
    ok = verdict("single create throughput", singles_per_s, SINGLE_TARGET_PER_S, "creates/s", at_least=True)
    ok &= verdict("batch import throughput", seeded.per_second, BATCH_TARGET_PER_S, "memories/s", at_least=True)
    print("\nALL PASS" if ok else "\nSOME TARGETS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
