"""Does the deterministic reranker improve recall? hit@k and MRR per category on the project-memory suite.

    .venv/bin/python bench/rerank_eval.py [--suite ../shared/eval/project-memory] [--embeddings local]

Ingests the suite into a temporary SQLite store (one Scope per project), then runs every query through the
real prepare pipeline (Atomic Memory only, 8 items, 32 KiB so the budget never cuts) with the reranker off
and with ``POWERCONTEXT_RERANK=deterministic``, reading the injected order from each Receipt. Metrics per
category: hit@1/3/8 (any expected memory in the first k), recall@8 (share of expected memories in the 8)
and MRR@8. ``abstain`` queries have nothing to find and are left out. The reranker is judged on the
totals; nothing in it knows this suite.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from powercontext.contract.prepare import PrepareContextRequest
from powercontext.inference.config import EmbeddingConfig, build_embedding_provider
from powercontext.recall.deterministic import LexicalCoverageReranker
from powercontext.recall.rerank import MemoryReranker
from powercontext.runtime import Runtime
from powercontext.search.embedding import GuardedEmbedder
from powercontext.store.base import NewMemory
from powercontext.store.sqlite import SqliteStore

# ../shared/eval/project-memory next to the checkout (a worktree under wt/ has it one level further up).
_REPO = Path(__file__).resolve().parents[1]
DEFAULT_SUITE = next(
    (p for p in (_REPO.parent / "shared", _REPO.parent.parent / "shared") if p.is_dir()), _REPO.parent / "shared"
) / "eval" / "project-memory"
KS = (1, 3, 8)


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def ingest(runtime: Runtime, memories: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """Creates the Scopes and memories; returns (scope_id, artifact_id) → suite id."""
    ids: dict[tuple[str, str], str] = {}
    by_scope: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for m in memories:
        by_scope[m["scope_id"]].append(m)
    for scope_id, items in by_scope.items():
        runtime.writes.create_scope(scope_id, scope_id, [])
        records = runtime.writes.create_memories(scope_id, [NewMemory(m["text"], m["kind"], ()) for m in items])
        for m, record in zip(items, records, strict=True):
            ids[(scope_id, record.key.artifact_id)] = m["id"]
    return ids


def ranked(runtime: Runtime, ids: dict[tuple[str, str], str], query: dict[str, Any]) -> list[str]:
    request = PrepareContextRequest.model_validate(
        {
            "scope_id": query["scope_id"],
            "query": query["query"],
            "max_bytes": 32768,
            "assembly": {"sections": [{"family": "memory", "limit": 8}]},
            "include_receipt": True,
        }
    )
    result = runtime.prepare(request, "eval")
    assert result.receipt_json is not None
    receipt = json.loads(result.receipt_json)
    out = []
    for item in receipt["selected"]:
        address = item["artifact_address"]
        out.append(ids[(address["scope_id"], address["artifact"]["artifact_id"])])
    return out


def score(order: list[str], expected: list[str]) -> dict[str, float]:
    hits = [i for i, memory_id in enumerate(order) if memory_id in expected]
    metrics = {f"hit@{k}": float(any(i < k for i in hits)) for k in KS}
    metrics["recall@8"] = len({order[i] for i in hits if i < 8}) / len(expected)
    metrics["mrr@8"] = 1.0 / (hits[0] + 1) if hits and hits[0] < 8 else 0.0
    return metrics


def evaluate(
    suite: Path, reranker: MemoryReranker | None, embeddings: str
) -> tuple[dict[str, dict[str, float]], float]:
    memories, queries = load(suite / "memories.jsonl"), load(suite / "queries.jsonl")
    with tempfile.TemporaryDirectory() as tmp:
        config = EmbeddingConfig(provider="local") if embeddings == "local" else EmbeddingConfig()
        runtime = Runtime(
            SqliteStore(Path(tmp) / "eval.db"),
            embedder=GuardedEmbedder(build_embedding_provider(config)),
            reranker=reranker,
        )
        try:
            ids = ingest(runtime, memories)
            per_category: dict[str, list[dict[str, float]]] = defaultdict(list)
            latencies = []
            for q in queries:
                if not q["expected"]:
                    continue
                start = time.perf_counter()
                order = ranked(runtime, ids, q)
                latencies.append((time.perf_counter() - start) * 1000)
                metrics = score(order, q["expected"])
                per_category[q["category"]].append(metrics)
                per_category["ALL"].append(metrics)
        finally:
            runtime.close()
    table = {cat: {m: statistics.fmean(r[m] for r in rows) for m in rows[0]} for cat, rows in per_category.items()}
    return table, statistics.median(latencies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--suite", type=Path, default=DEFAULT_SUITE)
    parser.add_argument("--embeddings", choices=("none", "local"), default="none")
    parser.add_argument("--coverage-weight", type=float, default=LexicalCoverageReranker.default_weight)
    args = parser.parse_args()
    variants: list[tuple[str, Callable[[], MemoryReranker | None]]] = [
        ("off", lambda: None),
        ("deterministic", lambda: LexicalCoverageReranker(coverage_weight=args.coverage_weight)),
    ]
    results = {}
    for name, make in variants:
        results[name] = evaluate(args.suite, make(), args.embeddings)
    off, on = results["off"][0], results["deterministic"][0]
    metrics = list(off["ALL"])
    print(f"embeddings={args.embeddings} coverage_weight={args.coverage_weight}")
    print(f"{'category':<12} {'n':>4}  " + "  ".join(f"{m:>17}" for m in metrics))
    counts = {c: n for c, n in _counts(args.suite).items()}
    for category in sorted(off, key=lambda c: (c == "ALL", c)):
        cells = "  ".join(f"{off[category][m]:.3f} → {on[category][m]:.3f}".rjust(17) for m in metrics)
        print(f"{category:<12} {counts.get(category, 0):>4}  {cells}")
    # In-process and sharing the CPU with the local model: latency here is indicative only (see rerank_overhead.py).
    off_ms, on_ms = results["off"][1], results["deterministic"][1]
    print(f"prepare p50 (indicative): off {off_ms:.2f} ms, deterministic {on_ms:.2f} ms")


def _counts(suite: Path) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for q in load(suite / "queries.jsonl"):
        if q["expected"]:
            counts[q["category"]] += 1
            counts["ALL"] += 1
    return counts


if __name__ == "__main__":
    main()
