"""Time of the SQLite store's Atomic Memory full-text search alone (no HTTP), this checkout against an earlier one.

Run: .venv/bin/python bench/fts_scope_search.py [--base da0deb2] [--size 10000] [--others 10000] [--calls 600]

Each side builds a fresh database in a worker process: one Scope of ``--size`` memories (the prepare benchmarks'
corpus) and, beside it, ``--others`` memories of the same corpus spread over 10 other Scopes, then times
``search_text`` for the benchmark queries with the prepare path's pool size (16). The base commit's ``src/`` is
exported with ``git archive`` and put first on ``PYTHONPATH``. Rounds alternate which side runs first; medians are
of the pooled samples, and the ratio is head/base within this one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import describe_target, make_corpus, make_queries, median, percentile
from fts_regression import export_src

POOL = 16
OTHER_SCOPES = 10


def worker(size: int, others: int, calls: int) -> None:
    """Build the database, time the searches, print the samples (ms) as JSON."""
    from powercontext.store.base import NewMemory
    from powercontext.store.sqlite import SqliteStore
    from powercontext.text.normalize import normalize_query
    from powercontext.text.tokenize import query_terms

    with tempfile.TemporaryDirectory(prefix="pc-fts-scope-") as tmp:
        store = SqliteStore(Path(tmp) / "bench.db")
        corpus = make_corpus(size + others)

        def fill(scope_id: str, items: list[dict[str, object]]) -> None:
            store.create_scope(scope_id, scope_id, [])
            for start in range(0, len(items), 500):
                batch = items[start : start + 500]
                store.create_memories(scope_id, [NewMemory(str(i["text"]), str(i["kind"]), ()) for i in batch])

        fill("bench", corpus[:size])
        rest = corpus[size:]
        for n in range(OTHER_SCOPES if others else 0):
            fill(f"other-{n}", rest[n::OTHER_SCOPES])
        queries = [query_terms(normalize_query(q)) for q in make_queries()]
        wall: list[float] = []
        cpu: list[float] = []
        for i in range(20 + calls):
            terms = queries[i % len(queries)]
            started, started_cpu = time.perf_counter(), time.thread_time()
            store.search_text("bench", terms, POOL)
            if i >= 20:
                wall.append((time.perf_counter() - started) * 1000)
                cpu.append((time.thread_time() - started_cpu) * 1000)
        store.close()
    print(json.dumps({"wall": wall, "cpu": cpu}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default="da0deb2")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--others", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    per_round = max(1, args.calls // args.rounds)
    if args.worker:
        worker(args.size, args.others, per_round)
        return 0
    print(describe_target())
    samples: dict[str, dict[str, list[float]]] = {k: {"base": [], "head": []} for k in ("wall", "cpu")}
    with tempfile.TemporaryDirectory(prefix="pc-fts-scope-src-") as tmp:
        base_src = export_src(args.base, Path(tmp))
        path = os.environ.get("PYTHONPATH", "")
        envs = {"base": {**os.environ, "PYTHONPATH": os.pathsep.join([str(base_src), path])}, "head": dict(os.environ)}
        command = [sys.executable, __file__, "--worker", "--size", str(args.size), "--others", str(args.others)]
        command += ["--calls", str(args.calls), "--rounds", str(args.rounds)]
        for round_no in range(args.rounds):
            order = ("base", "head") if round_no % 2 == 0 else ("head", "base")
            for name in order:
                done = subprocess.run(command, env=envs[name], capture_output=True, text=True, check=True)
                measured = json.loads(done.stdout.strip().splitlines()[-1])
                for kind in samples:
                    samples[kind][name] += measured[kind]
    shape = f"Scope of {args.size:,} memories beside {args.others:,} in {OTHER_SCOPES} other Scopes"
    print(f"\nsearch_text, pool {POOL}, {shape}, {args.rounds} rounds x {per_round} calls")
    # Thread CPU time is what the search itself costs; wall time adds whatever else the machine was running.
    for kind, pooled in samples.items():
        for name, values in pooled.items():
            print(f"  {kind} {name}: p50 {median(values):.3f} ms  p95 {percentile(values, 95):.3f} ms")
        ratio = median(pooled["head"]) / median(pooled["base"])
        print(f"  {kind} head/base p50 ratio (base {args.base}): {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
