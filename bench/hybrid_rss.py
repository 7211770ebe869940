"""The Server's resident memory with each route of the local embedding model, against no model (fts).

Run: .venv/bin/python bench/hybrid_rss.py [--backends none,numpy,onnx,openvino] [--memories 2000] [--calls 200]

For each route a fresh Server (its own SQLite file) is started with ``POWERCONTEXT_EMBEDDINGS=local`` and
``POWERCONTEXT_EMBEDDINGS_BACKEND=<route>`` (``none``: no embedding setting at all, the fts Server), then: RSS
once ready, after ``--memories`` bench memories through the batch route (each embedded on write), and after
``--calls`` prepares; the peak is the process's high-water mark (``VmHWM``). Issue 38's target: ≤ 200 MB for the
hybrid Server.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import psutil  # type: ignore[import-untyped]

from _common import (
    SCOPE_ID,
    create_scope,
    describe_target,
    http_client,
    make_corpus,
    make_queries,
    running_server,
    seed_batches,
)

TARGET_MB = 200.0


def _mb(process: psutil.Process) -> float:
    return float(process.memory_info().rss) / 2**20


def _peak_mb(pid: int) -> float:
    """The process's resident high-water mark (Linux ``VmHWM``), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(route: str, memories: int, calls: int, tmp: Path) -> dict[str, float]:
    env = {"POWERCONTEXT_EMBEDDINGS": "none"} if route == "none" else {}
    if route != "none":
        env = {"POWERCONTEXT_EMBEDDINGS": "local", "POWERCONTEXT_EMBEDDINGS_BACKEND": route}
    with running_server(tmp / f"{route}.db", tmp, env=env) as server, http_client(server) as client:
        process = psutil.Process(server.process.pid)
        ready = _mb(process)
        create_scope(client)
        seed_batches(client, make_corpus(memories))
        seeded = _mb(process)
        queries = make_queries()
        for i in range(calls):
            body = {"scope_id": SCOPE_ID, "query": queries[i % len(queries)], "max_bytes": 8000}
            response = client.post("/v1/context/prepare", json=body)
            response.raise_for_status()
        return {"ready": ready, "seeded": seeded, "after": _mb(process), "peak": _peak_mb(server.process.pid)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="none,numpy,onnx,openvino")
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    print(describe_target())
    print(f"{args.memories} memories, {args.calls} prepares; RSS in MB (target for hybrid: <= {TARGET_MB:.0f})")
    print(f"{'route':10s} {'ready':>7s} {'seeded':>7s} {'after':>7s} {'peak':>7s}")
    with tempfile.TemporaryDirectory(prefix="pc-hybrid-rss-") as tmp:
        for route in args.backends.split(","):
            found = measure(route, args.memories, args.calls, Path(tmp))
            figures = " ".join(f"{found[k]:7.0f}" for k in ("ready", "seeded", "after", "peak"))
            print(f"{route:10s} {figures}")


if __name__ == "__main__":
    main()
