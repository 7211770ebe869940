"""Prepare latency and batch import on embedded seekdb next to SQLite, at N memories, in one run.

Run: .venv/bin/python bench/oceanbase_prepare.py [--sizes 10000] [--calls 200] [--modes fts,hybrid]

For each size, mode and backend: a fresh store, N memories batch-imported over HTTP (500 per call),
then ``--calls`` sequential prepares (the same queries on both backends, include_receipt=false).
Targets from issue 10: in mode ``fts`` (no embedding model) seekdb prepare p50 ≤ 2× SQLite's and
seekdb batch import ≥ 2,000 memories/s; in mode ``hybrid`` both Servers run the local embedding
model (every import is embedded, every prepare is hybrid, query embedding included) and the target
is a p50 ≤ 1.5× SQLite's (the import rate is printed, not judged: the model bounds it). Sizes above
``--judge-max`` (default 10,000) are reported as measured, without targets.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from _common import (
    Server,
    create_scope,
    describe_target,
    free_port,
    http_client,
    make_corpus,
    make_queries,
    median,
    percentile,
    seed_batches,
    verdict,
    wait_ready,
)

PREPARE_RATIO_TARGET = 2.0
HYBRID_RATIO_TARGET = 1.5
IMPORT_TARGET_PER_S = 2_000.0
WARMUP = 20


@contextmanager
def server_on(store_url: str, log_dir: Path, settings: dict[str, str]) -> Iterator[Server]:
    port = free_port()
    code = (
        "from powercontext.server.run import serve; from powercontext.settings import Settings; "
        f"serve(Settings.from_env(store={store_url!r}, host='127.0.0.1', port={port}))"
    )
    log_path = log_dir / f"server-{port}.log"
    with log_path.open("wb") as log:
        spawned = time.perf_counter()
        env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")} | settings
        process = subprocess.Popen([sys.executable, "-c", code], stdout=log, stderr=log, env=env)
        try:
            ready = wait_ready(process, f"http://127.0.0.1:{port}/health/ready", spawned, 120.0, log_path)
            yield Server(process, f"http://127.0.0.1:{port}", ready)
        finally:
            process.terminate()
            process.wait(timeout=30)


def _tree_cpu_seconds(root: int) -> float:
    """CPU seconds used so far by ``root`` and every process below it (the embedded seekdb engine is a child)."""
    children: dict[int, list[int]] = {}
    times: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended while we looked
        pid = int(entry.name)
        children.setdefault(int(fields[1]), []).append(pid)
        times[pid] = (int(fields[11]) + int(fields[12])) / tick
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        total += times.get(pid, 0.0)
        todo.extend(children.get(pid, ()))
    return total


def settle(root: int, max_s: float, quiet_s: float = 8.0, quiet_share: float = 0.05) -> float:
    """Wait until the Server's process tree has used under ``quiet_share`` of one core for ``quiet_s`` in a row,
    at most ``max_s``; returns the seconds waited.

    After a bulk import seekdb freezes and merges what was written. Measured after a 10,000-memory import with
    embeddings: idle for 4 s, then ~11 CPU-seconds from the 5th to the 16th second. Prepares measured during
    that merge measure the merge; a fixed sleep either waits too long or stops in the middle of it, and so
    does a short quiet window.
    """
    start = time.perf_counter()
    quiet_since, used = start, _tree_cpu_seconds(root)
    while (now := time.perf_counter()) - start < max_s and now - quiet_since < quiet_s:
        time.sleep(1.0)
        cpu = _tree_cpu_seconds(root)
        if cpu - used > quiet_share:
            quiet_since = time.perf_counter()
        used = cpu
    return time.perf_counter() - start


def prepare_ms(client: httpx.Client, queries: list[str], calls: int) -> list[float]:
    for i in range(WARMUP):
        client.post("/v1/context/prepare", json={"scope_id": "bench-project", "query": queries[i % len(queries)]})
    samples = []
    for i in range(calls):
        t0 = time.perf_counter()
        r = client.post("/v1/context/prepare", json={"scope_id": "bench-project", "query": queries[i % len(queries)]})
        samples.append((time.perf_counter() - t0) * 1000.0)
        if r.status_code != 200:
            raise RuntimeError(f"prepare failed: HTTP {r.status_code}")
    return samples


def run_size(
    size: int,
    calls: int,
    work: Path,
    hybrid: bool,
    judge: bool,
    fulltext: str = "exact",
    vectors: str = "exact",
    settle_s: float = 0.0,
) -> bool:
    print(f"\n== {size:,} active memories, {'hybrid (local model)' if hybrid else 'fts only'} ==")
    corpus = make_corpus(size)
    queries = make_queries()
    p50: dict[str, float] = {}
    rate: dict[str, float] = {}
    for backend, url in (
        ("sqlite", f"sqlite://{work / f'{size}-{hybrid}.db'}"),
        (
            "seekdb",
            f"seekdb://{work / f'seekdb-{size}-{hybrid}-{fulltext}-{vectors}'}?fulltext={fulltext}&vectors={vectors}",
        ),
    ):
        settings = {"POWERCONTEXT_EMBEDDINGS": "local" if hybrid else "none", "POWERCONTEXT_LOG_LEVEL": "warning"}
        with server_on(url, work, settings) as server, http_client(server) as client:
            create_scope(client)
            seeded = seed_batches(client, corpus)
            # Prepares are measured in steady state, once the engine has merged what the import wrote: that is
            # what a Server serving later prepares sees. The wait is printed.
            waited = settle(server.process.pid, settle_s)
            rate[backend] = seeded.per_second
            samples = prepare_ms(client, queries, calls)
            p50[backend] = median(samples)
            print(
                f"{backend}: ready in {server.ready_seconds:.1f} s; import {seeded.per_second:,.0f} memories/s;"
                f" settled in {waited:.0f} s;"
                f" prepare p50={median(samples):.2f} ms p95={percentile(samples, 95):.2f} ms;"
                f" load average {os.getloadavg()[0]:.2f}"
            )
    if not judge:
        print(f"seekdb/sqlite prepare p50 at {size:,}: {p50['seekdb'] / p50['sqlite']:.2f} x (reported, not judged)")
        return True
    ok = verdict(
        f"seekdb/sqlite {'hybrid ' if hybrid else ''}prepare p50 at {size:,}",
        p50["seekdb"] / p50["sqlite"],
        HYBRID_RATIO_TARGET if hybrid else PREPARE_RATIO_TARGET,
        "x",
        at_least=False,
    )
    if not hybrid:
        ok &= verdict(
            f"seekdb batch import at {size:,}", rate["seekdb"], IMPORT_TARGET_PER_S, "memories/s", at_least=True
        )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000", help="comma-separated memory counts")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--modes", default="fts,hybrid", help="fts (no model) and/or hybrid (the local model)")
    parser.add_argument("--judge-max", type=int, default=10_000, help="sizes above this are reported, not judged")
    parser.add_argument(
        "--seekdb-fulltext",
        choices=("exact", "native"),
        default="exact",
        help="the seekdb database's full-text search: exact (default) or the engine's FULLTEXT index",
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=120.0,
        help="at most this many seconds to wait after the import, on both backends, until the Server and its"
        " engine are idle (under 5%% of a core for 8 s in a row) before the prepares",
    )
    parser.add_argument(
        "--seekdb-vectors",
        choices=("exact", "native"),
        default="exact",
        help="the seekdb database's vector search: exact in-memory (default) or the engine's VECTOR(n) columns",
    )
    args = parser.parse_args()
    print(describe_target())
    ok = True
    with tempfile.TemporaryDirectory(prefix="pc-bench-ob-") as tmp:
        for size in (int(s) for s in args.sizes.split(",") if s.strip()):
            for mode in (m.strip() for m in args.modes.split(",") if m.strip()):
                if mode not in ("fts", "hybrid"):
                    parser.error(f"unknown mode {mode!r}")
                ok &= run_size(
                    size,
                    args.calls,
                    Path(tmp),
                    mode == "hybrid",
                    size <= args.judge_max,
                    args.seekdb_fulltext,
                    args.seekdb_vectors,
                    args.settle,
                )
    print("\nALL PASS" if ok else "\nSOME TARGETS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
