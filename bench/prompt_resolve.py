"""In-process, no Server: what resolving a Scope's Prompt costs an inference call (one per Scope per prepare).

Cases, each on a real SQLite file: a Scope without a prompt Artifact (built-in), an auto head, a custom head
without demonstrations, a custom head with 50 demonstrations (~200 KiB canonical JSON; cached after its first
resolution), and the same head's first, uncached resolution (validate + compile + digest). Figures only.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from powercontext.prompts import ScopePromptResolver
from powercontext.store.base import PromptContent, PromptDemonstration
from powercontext.store.sqlite import SqliteStore

KEY = "memory.rerank"


def timed(call: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1e6)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    candidates = [f"candidate memory number {i} about the settlement batch and its retries " * 6 for i in range(10)]
    demos = tuple(
        PromptDemonstration({"request": f"question {i}", "candidates": candidates}, {"ranks": [3, 1, 2]})
        for i in range(50)
    )
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "bench.db")
        for sid in ("none", "auto", "custom", "demos"):
            store.create_scope(sid, sid, [])
        store.commit_prompt("auto", KEY, 0, PromptContent("auto", "", ()))
        store.commit_prompt("custom", KEY, 0, PromptContent("custom", "Prefer constraints and decisions.", ()))
        store.commit_prompt("demos", KEY, 0, PromptContent("custom", "Prefer constraints and decisions.", demos))
        resolver = ScopePromptResolver(store)
        rows: list[tuple[str, list[float]]] = []
        for sid in ("none", "auto", "custom", "demos"):
            resolver(sid, KEY)  # warm the reader connection (and the compiled cache for custom heads)
            rows.append((f"{sid} head", timed(lambda sid=sid: resolver(sid, KEY), args.calls)))
        cold = timed(lambda: ScopePromptResolver(store)("demos", KEY), max(50, args.calls // 20))
        rows.append(("demos head, uncached", cold))
        store.close()
    print(f"python {sys.version.split()[0]}; {args.calls} calls per case; microseconds per resolve")
    for name, values in rows:
        q = statistics.quantiles(values, n=20)
        print(f"{name:24s} p50 {statistics.median(values):8.1f}  p95 {q[18]:8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
