"""The explain route's cost over HTTP at N active memories, next to the prepare it explains.

Run: .venv/bin/python bench/explain_latency.py [--size 10000] [--calls 100]

A fresh database with N memories (batch-imported), then ``--calls`` rounds of sequential calls with one
persistent client, each round sending the same query three ways, in rotating order so all three see the
same queries, cache state and machine noise: prepare with a Receipt (the host path's most expensive form),
explain, and explain with one expected id that the run did not rank (which adds the deeper search).
Explain is diagnostic, never on the host path, so there is no target: the figures go into docs/explain.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
)

WARMUP_ROUNDS = 10
Call = Callable[[httpx.Client, str], float]


def _timed(client: httpx.Client, path: str, body: dict[str, Any]) -> float:
    t0 = time.perf_counter()
    response = client.post(path, json=body)
    elapsed_ms = (time.perf_counter() - t0) * 1000.0
    if response.status_code != 200:
        raise RuntimeError(f"{path} failed: HTTP {response.status_code} {response.text[:300]}")
    return elapsed_ms


def _calls(unranked_id: str) -> dict[str, Call]:
    def body(query: str) -> dict[str, Any]:
        return {"scope_id": SCOPE_ID, "query": query, "include_receipt": True}

    return {
        "prepare (receipt)": lambda c, q: _timed(c, "/v1/context/prepare", body(q)),
        "explain": lambda c, q: _timed(c, "/v1/context/explain", body(q)),
        "explain + expected": lambda c, q: _timed(c, "/v1/context/explain", {**body(q), "expected": [unranked_id]}),
    }


def _unranked_id(client: httpx.Client) -> str:
    """An active memory that shares no term with any benchmark query, so an explain must search deeper."""
    response = client.post(
        f"/v1/scopes/{SCOPE_ID}/atomic-memory", json={"text": "Zyxwv qwertz unrelated marker.", "kind": "note"}
    )
    response.raise_for_status()
    return str(response.json()["artifact_address"]["artifact"]["artifact_id"])


def run(size: int, calls: int, work: Path) -> None:
    print(f"\n== {size:,} active memories ==")
    with running_server(work / f"explain-{size}.db", work) as server, http_client(server) as client:
        create_scope(client)
        seeded = seed_batches(client, make_corpus(size))
        print(f"seeded {seeded.count:,} memories in {seeded.seconds:.2f} s")
        kinds = _calls(_unranked_id(client))
        names = list(kinds)
        queries = make_queries()
        for i in range(WARMUP_ROUNDS):
            for name in names:
                kinds[name](client, queries[i % len(queries)])
        samples: dict[str, list[float]] = {name: [] for name in names}
        for i in range(calls):
            query = queries[i % len(queries)]
            order = names[i % 3 :] + names[: i % 3]
            for name in order:
                samples[name].append(kinds[name](client, query))
    base = median(samples[names[0]])
    for name in names:
        values = samples[name]
        p50 = median(values)
        print(
            f"{name:20s} n={len(values)} p50={p50:.2f} ms p95={percentile(values, 95):.2f} ms "
            f"max={max(values):.2f} ms  p50 ratio to prepare: {p50 / base:.2f}x"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000, help="active memories")
    parser.add_argument("--calls", type=int, default=100, help="rounds of the three calls")
    args = parser.parse_args()
    print(describe_target())
    with tempfile.TemporaryDirectory(prefix="pc-bench-") as tmp:
        run(args.size, args.calls, Path(tmp))
    return 0


if __name__ == "__main__":
    sys.exit(main())
