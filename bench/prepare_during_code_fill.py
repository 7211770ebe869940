"""Prepare latency while the background code-vector fill runs, with the local model (issue 38's hybrid default).

Run: .venv/bin/python bench/prepare_during_code_fill.py [--tree DIR] [--prepares 30] [--src SRC_DIR]

A fresh Server (its own SQLite file, ``POWERCONTEXT_EMBEDDINGS=local``, the tree as its code root) gets a Scope
with three memories, then ``code index`` of ``--tree`` (this repository by default: ~3,800 chunks, minutes of
fill on two cores). While ``/health/ready`` shows the fill embedding, it times a full-text and a hybrid memory
search, then ``--prepares`` prepares 0.3 s apart, and prints their p50 / p90 / max with the chunks the fill
embedded meanwhile. ``--src`` runs another checkout's ``src/`` (e.g. a ``git worktree`` of an older commit) for
a before/after in the same hour.

Measured 2026-12-07 on the 2-core AVX2 machine, idle: p50 / p90 / max 192 / 356 / 397 ms before the fills
yielded to queries (0b9af16), 44 / 65 / 72 ms after (00de6d5).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from _common import describe_target, free_port, percentile

REPO = Path(__file__).resolve().parent.parent
SCOPE = "bench:fill"
QUERY = "how do we deploy with a canary?"


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", type=Path, default=REPO)
    parser.add_argument("--prepares", type=int, default=30)
    parser.add_argument("--src", type=Path, default=REPO / "src")
    args = parser.parse_args()
    print(describe_target())
    tree = args.tree.resolve()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "PYTHONPATH": str(args.src.resolve()),
            "POWERCONTEXT_EMBEDDINGS": "local",
            "POWERCONTEXT_CODE_ROOTS": str(tree),
        }
        command = [sys.executable, "-m", "powercontext", "server", "run", "--port", str(port), "--db", f"{tmp}/pc.db"]
        with open(f"{tmp}/server.log", "wb") as log:
            server = subprocess.Popen(command, env=env, stdout=log, stderr=log)
        try:
            return _measure(base, tree, args.prepares)
        finally:
            server.terminate()
            server.wait(timeout=30)


def _measure(base: str, tree: Path, prepares: int) -> int:
    client = httpx.Client(base_url=base, timeout=60.0)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if client.get("/health/ready").status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    client.post("/v1/scopes", json={"scope_id": SCOPE, "title": "fill bench"}).raise_for_status()
    for text in (
        "Deploys go out through the blue/green pipeline.",
        "We chose SQLite as the embedded default.",
        "Canary releases get 5% of traffic for an hour.",
    ):
        client.post(f"/v1/scopes/{SCOPE}/atomic-memory", json={"text": text, "kind": "fact"}).raise_for_status()
    client.post(f"/v1/scopes/{SCOPE}/code/index", json={"path": str(tree)}).raise_for_status()

    def fill() -> dict[str, object]:
        detail: dict[str, object] = client.get("/health/ready").json().get("code-embeddings", {})
        return detail

    time.sleep(2)
    if fill().get("state") != "embedding":
        print("the fill is not running (already done, or no code to embed): nothing to measure")
        return 1
    embedded_before = fill().get("embedded")
    search = f"/v1/scopes/{SCOPE}/atomic-memory/search"
    for mode in ("fts", "hybrid"):
        body = {"query": QUERY, "mode": mode}
        times = [_timed(lambda b=body: client.post(search, json=b)) for _ in range(8)]
        print(f"memory search {mode:6}: p50 {statistics.median(times):6.1f} ms")
    times = []
    for _ in range(prepares):
        times.append(_timed(lambda: client.post("/v1/context/prepare", json={"scope_id": SCOPE, "query": QUERY})))
        time.sleep(0.3)
    still = fill()
    print(
        f"prepares during the fill: p50 {statistics.median(times):.1f} ms, p90 {percentile(times, 90):.1f} ms,"
        f" max {max(times):.1f} ms; fill {still.get('state')}, embedded {embedded_before} -> {still.get('embedded')}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
