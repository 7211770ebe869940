"""fts-only prepare latency of this checkout against an earlier commit, in one run on one machine.

Run: .venv/bin/python bench/fts_regression.py [--base 9147dcd] [--size 10000] [--calls 300] [--rounds 3] [--target 1.03]

The base commit's ``src/`` is exported with ``git archive`` to a temporary directory and served with
``PYTHONPATH`` pointing at it; this checkout is served as installed. Both Servers get the same
corpus through the batch endpoint (each its own database: an older schema cannot open a newer
one), no embedding provider, and the same queries, alternating which Server goes first. The calls are
split over ``--rounds`` pairs of freshly started Servers, and the verdict is on the pooled samples.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from _common import (
    BENCH_DIR,
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
from prepare_latency import prepare_once

# Main before rounds, rerank and Prompts landed: with rerank off, prepare must stay within 3% of it.
BEFORE_RERANK = "9147dcd"
REGRESSION_TARGET = 1.03
WARMUP = 20


def export_src(commit: str, into: Path) -> Path:
    repo = BENCH_DIR.parent
    archive = subprocess.run(["git", "-C", str(repo), "archive", commit, "src"], capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", default=BEFORE_RERANK)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3, help="fresh Server pairs; --calls is split among them")
    parser.add_argument("--target", type=float, default=REGRESSION_TARGET, help="largest head/base p50 ratio")
    args = parser.parse_args()
    print(describe_target())
    corpus = make_corpus(args.size)
    queries = make_queries()
    quiet = {"POWERCONTEXT_LOG_LEVEL": "warning", "POWERCONTEXT_EMBEDDINGS": "none"}
    per_round = max(1, args.calls // args.rounds)
    # samples[receipt][name]: every measured call of every round, pooled.
    samples: dict[bool, dict[str, list[float]]] = {r: {"base": [], "head": []} for r in (False, True)}
    with tempfile.TemporaryDirectory(prefix="pc-regress-") as tmp:
        work = Path(tmp)
        base_src = export_src(args.base, work / "base")
        base_env = {**quiet, "PYTHONPATH": os.pathsep.join([str(base_src), os.environ.get("PYTHONPATH", "")])}
        for round_no in range(args.rounds):
            # Fresh Server processes each round (same databases): one process pair's own layout and cache
            # luck shifts its p50 by a few percent, as much as the target allows.
            with (
                running_server(work / "base.db", work, env=base_env) as base_server,
                running_server(work / "head.db", work, env=quiet) as head_server,
                http_client(base_server) as base,
                http_client(head_server) as head,
            ):
                if round_no == 0:
                    for client in (base, head):
                        create_scope(client)
                        seed_batches(client, corpus)
                for receipt in (False, True):
                    this_round: dict[str, list[float]] = {"base": [], "head": []}
                    for i in range(WARMUP + per_round):
                        query = queries[i % len(queries)]
                        order = (("base", base), ("head", head)) if i % 2 == 0 else (("head", head), ("base", base))
                        for name, client in order:
                            elapsed, _ = prepare_once(client, query, 8000, receipt)
                            if i >= WARMUP:
                                this_round[name].append(elapsed)
                    for name, values in this_round.items():
                        samples[receipt][name] += values
                    ratio = median(this_round["head"]) / median(this_round["base"])
                    print(f"round {round_no + 1}, include_receipt={str(receipt).lower()}: head/base p50 {ratio:.3f}")
    ok = True
    for receipt, pooled in samples.items():
        shape = f"{args.size:,} memories, {args.rounds} rounds x {per_round} calls"
        print(f"\ninclude_receipt={str(receipt).lower()}, {shape}")
        for name, values in pooled.items():
            print(f"  {name}: p50 {median(values):.2f} ms  p95 {percentile(values, 95):.2f} ms")
        ratio = median(pooled["head"]) / median(pooled["base"])
        ok &= verdict(f"head/base p50 ratio (base {args.base})", ratio, args.target, "x", at_least=False, digits=3)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
