"""Prepare latency as one Scope grows to a million memories (issue 39), fts only, over HTTP.

Run: .venv/bin/python bench/scale.py [--sizes 10000,100000,1000000] [--calls 300] [--rounds 3] [--store sqlite]

For each size: a database of N memories in one Scope (the bench corpus), built in-process through the store's own
batch write, 50,000 memories per transaction (the write path the Server runs, without HTTP: a million take
minutes, not the hour the batch route would), cached under bench/results/ by size, corpus and schema version.
Then ``--rounds`` freshly started Servers each answer ``--calls`` / rounds sequential prepares
(include_receipt=false and =true alternating, same queries), and the figures are the medians over rounds of
each round's p50, p95 and p99. The share of queries by search path comes from the store: every query whose
terms the Scope holds is ranked over all of them (exact top-k BM25); the rest match nothing.

Targets (issue 39): 1M p50 <= 10 ms and p95 <= 30 ms; 100k p95 <= 15 ms; 10k p50 <= 10 ms; Receipt <= 1.05x.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import httpx

from _common import (
    CORPUS_VERSION,
    RESULTS_DIR,
    SCOPE_ID,
    describe_target,
    http_client,
    make_corpus,
    make_queries,
    percentile,
    running_server,
    verdict,
)

# size -> {figure: target in ms}
TARGETS_MS: dict[int, dict[str, float]] = {
    10_000: {"p50": 10.0},
    100_000: {"p95": 15.0},
    1_000_000: {"p50": 10.0, "p95": 30.0},
}
RECEIPT_RATIO_TARGET = 1.05
PER_TRANSACTION = 50_000
WARMUP = 20


def build(size: int, path: Path) -> float:
    """The size's database (cached); seconds spent building it now (0 when cached)."""
    from powercontext.store.base import NewMemory
    from powercontext.store.sqlite import SqliteStore

    if path.exists():
        return 0.0
    partial = path.with_suffix(".partial")
    for leftover in path.parent.glob(partial.name + "*"):
        leftover.unlink()
    corpus = make_corpus(size)
    started = time.perf_counter()
    store = SqliteStore(partial)
    try:
        store.create_scope(SCOPE_ID, "Benchmark", [])
        for start in range(0, size, PER_TRANSACTION):
            chunk = corpus[start : start + PER_TRANSACTION]
            store.create_memories(SCOPE_ID, [NewMemory(c["text"], c["kind"], tuple(c["tags"])) for c in chunk])
    finally:
        store.close()
    partial.rename(path)
    return time.perf_counter() - started


def paths(db: Path, queries: list[str]) -> dict[str, int]:
    """How many queries take each search path: ranked over the Scope's terms, or nothing to rank."""
    from powercontext.store.core.terms import term_statistics
    from powercontext.store.sqlite import SqliteStore
    from powercontext.text.tokenize import query_terms

    store = SqliteStore(db)
    try:
        conn = store._reader()
        shares = {"ranked (every present term, top-k)": 0, "no term in the Scope": 0}
        for query in queries:
            _, counts = term_statistics(conn, SCOPE_ID, query_terms(query, 256))
            shares["ranked (every present term, top-k)" if counts else "no term in the Scope"] += 1
        return shares
    finally:
        store.close()


def prepare_ms(client: httpx.Client, query: str, receipt: bool) -> float:
    body = {"scope_id": SCOPE_ID, "query": query, "max_bytes": 8000, "include_receipt": receipt}
    t0 = time.perf_counter()
    response = client.post("/v1/context/prepare", json=body)
    elapsed = (time.perf_counter() - t0) * 1000.0
    if response.status_code != 200:
        raise RuntimeError(f"prepare failed: HTTP {response.status_code} {response.text[:300]}")
    return elapsed


def run_size(size: int, calls: int, rounds: int) -> bool:
    from powercontext.store.sqlite.migrations import LATEST_VERSION

    print(f"\n== {size:,} memories in one Scope ==")
    RESULTS_DIR.mkdir(exist_ok=True)
    db = RESULTS_DIR / f"scale-{size}-c{CORPUS_VERSION}-s{LATEST_VERSION}.db"
    seconds = build(size, db)
    print(
        f"database: {db.name} ({db.stat().st_size / 1e6:.0f} MB)" + (f", built in {seconds:.0f} s" if seconds else "")
    )
    if seconds:
        print(f"  in-process batch import: {size / seconds:,.0f} memories/s")
    queries = make_queries()
    for name, count in paths(db, queries).items():
        print(f"  path {name}: {count}/{len(queries)} queries ({count / len(queries):.0%})")
    figures: dict[str, list[float]] = {"p50": [], "p95": [], "p99": [], "receipt": []}
    quiet = {"POWERCONTEXT_LOG_LEVEL": "warning", "POWERCONTEXT_EMBEDDINGS": "none"}
    per_round = max(1, calls // rounds)
    for _ in range(rounds):
        with running_server(db, RESULTS_DIR, env=quiet) as server, http_client(server) as client:
            for i in range(WARMUP):
                prepare_ms(client, queries[i % len(queries)], False)
            plain: list[float] = []
            receipt: list[float] = []
            for i in range(per_round):
                query = queries[i % len(queries)]
                for with_receipt in (False, True) if i % 2 == 0 else (True, False):
                    (receipt if with_receipt else plain).append(prepare_ms(client, query, with_receipt))
        figures["p50"].append(statistics.median(plain))
        figures["p95"].append(percentile(plain, 95))
        figures["p99"].append(percentile(plain, 99))
        figures["receipt"].append(statistics.median(receipt) / statistics.median(plain))
    medians = {name: statistics.median(values) for name, values in figures.items()}
    print(
        f"prepare (fts, plain) medians of {rounds} rounds: p50={medians['p50']:.2f} ms"
        f" p95={medians['p95']:.2f} ms p99={medians['p99']:.2f} ms  (per round p50: "
        + ", ".join(f"{v:.2f}" for v in figures["p50"])
        + ")"
    )
    ok = True
    for figure, target in TARGETS_MS.get(size, {}).items():
        ok &= verdict(f"prepare {figure} at {size:,}", medians[figure], target, "ms", at_least=False)
    ok &= verdict(
        "receipt p50 ratio (true/false)", medians["receipt"], RECEIPT_RATIO_TARGET, "x", at_least=False, digits=3
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--calls", type=int, default=300, help="prepare calls per include_receipt value, all rounds")
    parser.add_argument("--rounds", type=int, default=3, help="freshly started Servers; figures are medians")
    args = parser.parse_args()
    print(describe_target())
    ok = True
    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        ok &= run_size(size, args.calls, args.rounds)
    print("\nALL PASS" if ok else "\nSOME TARGETS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
