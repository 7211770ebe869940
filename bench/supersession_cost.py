"""What the newer-first rule (recall/supersession.py) costs a full-text prepare, part by part, in one process.

Run: .venv/bin/python bench/supersession_cost.py [--size 10000] [--reps 15]

In process, on a SQLite store seeded with the bench corpus (no Server, no HTTP): every part is timed on the same
query back to back with its counterpart (rotating which goes first), and each query keeps its fastest time of
``--reps``, so what another process does to this shared machine mostly drops out. Reported per query, averaged
over the bench queries:

* ``prepare`` with the rule and without it (every query treated as a history query, as the
  ``bench/fts_regression.py`` base does);
* the store's full-text read at the Atomic Memory pool (16) and at the rule's depth (32);
* the re-ordering itself (``newer_first`` over the 32 hits) and the history test (``asks_for_history``).

``bench/fts_regression.py`` gives the verdict over HTTP; this says where the difference comes from.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import powercontext.recall.readers as readers
from _common import make_corpus, make_queries
from powercontext.contract.prepare import PrepareContextRequest
from powercontext.recall.supersession import SEARCH_DEPTH_FACTOR, asks_for_history, newer_first
from powercontext.runtime import Runtime
from powercontext.store.base import NewMemory
from powercontext.store.sqlite import SqliteStore
from powercontext.text.normalize import normalize_query
from powercontext.text.tokenize import query_terms

SCOPE = "bench-supersession"
POOL = readers.ATOMIC_CANDIDATE_LIMIT


def fastest(parts: dict[str, Callable[[Any], object]], inputs: Sequence[Any], reps: int) -> dict[str, float]:
    """Mean over ``inputs`` of each part's fastest time (ms); the parts run back to back, in rotating order."""
    names = list(parts)
    best = {n: [float("inf")] * len(inputs) for n in names}
    for rep in range(reps):
        order = names[rep % len(names) :] + names[: rep % len(names)]
        for k, item in enumerate(inputs):
            for name in order:
                start = time.perf_counter_ns()
                parts[name](item)
                best[name][k] = min(best[name][k], (time.perf_counter_ns() - start) / 1e6)
    return {n: sum(v) / len(v) for n, v in best.items()}


def seeded_store(path: Path, size: int) -> SqliteStore:
    store = SqliteStore(path)
    store.create_scope(SCOPE, "supersession cost", [])
    corpus = make_corpus(size)
    for i in range(0, size, 500):
        batch = corpus[i : i + 500]
        store.create_memories(SCOPE, [NewMemory(c["text"], c["kind"], tuple(c["tags"])) for c in batch])
    return store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args()
    queries = make_queries()
    with tempfile.TemporaryDirectory(prefix="pc-supersession-") as tmp:
        store = seeded_store(Path(tmp) / "bench.db", args.size)
        runtime = Runtime(store)
        requests = [PrepareContextRequest(scope_id=SCOPE, query=q, max_bytes=8000) for q in queries]

        def prepare(request: PrepareContextRequest, rule: bool) -> None:
            # The rule off is the history path (measurement only): the same switch the regression base uses.
            readers.asks_for_history = asks_for_history if rule else (lambda _query: True)
            runtime.prepare(request, "bench")

        whole = fastest(
            {"prepare, rule on": lambda r: prepare(r, True), "prepare, rule off": lambda r: prepare(r, False)},
            requests,
            args.reps,
        )
        readers.asks_for_history = asks_for_history
        terms = [query_terms(normalize_query(q), 256) for q in queries]
        depth = POOL * SEARCH_DEPTH_FACTOR
        reads = fastest(
            {
                f"search_text, {POOL} rows": lambda t: store.search_text(SCOPE, t, POOL),
                f"search_text, {depth} rows": lambda t: store.search_text(SCOPE, t, depth),
            },
            terms,
            args.reps,
        )
        lists = [hits for hits in (store.search_text(SCOPE, t, depth) for t in terms) if hits]
        ordering = fastest(
            {"newer_first": lambda hits: newer_first(hits, POOL, lambda h: h.record.observed, lambda h: h.record.text)},
            lists,
            args.reps,
        )
        history = fastest({"asks_for_history": asks_for_history}, queries, args.reps)
        store.close()
    print(f"{args.size:,} memories, {len(queries)} queries, fastest of {args.reps} per query, mean over queries")
    for name, ms in {**whole, **reads, **ordering, **history}.items():
        print(f"  {name:28s} {ms:7.3f} ms")
    on, off = whole["prepare, rule on"], whole["prepare, rule off"]
    print(f"  rule on / off: {on / off:.3f}x (+{on - off:.3f} ms)")


if __name__ == "__main__":
    main()
