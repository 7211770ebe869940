"""Side-by-side prepare latency: the public PyPI peer ``powercontext`` 1.4.1 vs our Server.

Run: .venv/bin/python bench/peer_prepare_latency.py --peer-bin /tmp/peer/bin [--sizes 5000,10000] [--calls 200]

Both Servers run as subprocesses on loopback with a fresh temporary data directory, SQLite storage and no
model provider (full-text recall only). Both are seeded with the same corpus (``make_corpus`` from
``_common``, text and kind only: the peer's remember takes no tags) and asked the same queries
(``make_queries``) in the same order. Sizes are seeded incrementally: the first N items of one
deterministic corpus, topped up for the next size.

The peer has no batch write over HTTP, so it is seeded one ``POST /v1/memory/remember`` per memory (a
few concurrent clients). If that is slower than ``--min-peer-seed-rate`` memories/s, sizes above
``--cap`` are skipped (for both, so every printed row compares equal data) and the script says so.

Measurement: ``--warmup`` unrecorded calls per Server, then ``--calls`` rounds; each round sends one
query to each Server, alternating which goes first, one persistent HTTP client per Server, nothing
concurrent. Latency is client-side wall time of one POST /v1/context/prepare (max_bytes 8000).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from _common import (
    BATCH_SIZE,
    SCOPE_ID,
    Server,
    create_scope,
    free_port,
    http_client,
    make_corpus,
    make_queries,
    median,
    percentile,
    running_server,
    seed_batches,
    wait_ready,
)

MAIN_ROOT = Path(__file__).resolve().parent.parent
CORPUS_SOURCE = "bench/_common.py make_corpus/make_queries"
PEER_CHUNK = 500  # remember calls per progress line
READY_TIMEOUT_S = 90.0

# -- peer server subprocess ----------------------------------------------------------------------------


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group this script created, then SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=20)


@contextlib.contextmanager
def running_peer(peer_bin: Path, work: Path, extra_env: Sequence[str] = ()) -> Iterator[Server]:
    """The peer's own CLI Server in a new session (its whole process group is stopped on exit)."""
    port = free_port()
    home = work / "peer-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT")}
    env["POWERCONTEXT_HOME"] = str(home)  # SQLite database (powercontext.db) and scheduler state live here
    env["POWERCONTEXT_SERVER_WORKSPACE"] = str(work)
    env["NO_PROXY"] = "127.0.0.1,localhost"
    for pair in extra_env:  # e.g. POWERCONTEXT_SERVER_LOGGING_ACCESS=false
        key, _, value = pair.partition("=")
        env[key] = value
    argv = [str(peer_bin / "powercontext"), "server", "run", "--no-env-file", "--host", "127.0.0.1"]
    argv += ["--port", str(port)]
    base_url = f"http://127.0.0.1:{port}"
    log = work / "peer.log"
    with log.open("wb") as handle:
        spawned = time.perf_counter()
        process = subprocess.Popen(
            argv, env=env, cwd=work, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        yield Server(
            process,
            base_url,
            wait_ready(process, f"{base_url}/health/ready", spawned, READY_TIMEOUT_S, log, name="peer"),
        )
    finally:
        _stop_group(process)


def keep_artifacts(keep: Path, work: Path) -> None:
    """Copy both server logs and the peer database out of the temporary directory."""
    keep.mkdir(parents=True, exist_ok=True)
    ours_log = next(iter(sorted(work.glob("server-*.log"))), None)  # running_server names it by port
    files = {"peer.log": work / "peer.log", "peer-powercontext.db": work / "peer-home" / "powercontext.db"}
    if ours_log is not None:
        files["ours.log"] = ours_log
    for name, source in files.items():
        if source.exists():
            (keep / name).write_bytes(source.read_bytes())


# -- peer seeding --------------------------------------------------------------------------------------


def peer_create_scope(client: httpx.Client) -> str:
    body = {
        "title": "Benchmark bench-project",
        "summary": "Prepare latency benchmark corpus.",
        "idempotency_key": "bench-project-1",
    }
    response = client.post("/v1/scopes", json=body)
    if response.status_code not in (200, 201):
        raise RuntimeError(f"peer scope create: HTTP {response.status_code} {response.text[:500]}")
    return str(response.json()["scope_id"])


@dataclass
class PeerSeed:
    written: int = 0
    unchanged: int = 0
    retries: int = 0
    seconds: float = 0.0


def show_peer_progress(stats: PeerSeed) -> None:
    done = stats.written + stats.unchanged
    print(f"  peer seeded {done:,} ({stats.written / stats.seconds:.1f}/s cumulative)", flush=True)


def seed_peer(base_url: str, scope: str, items: Sequence[dict[str, Any]], workers: int, stats: PeerSeed) -> None:
    """One remember call per memory; ``workers`` clients in parallel; a progress line per chunk."""
    clients = [httpx.Client(base_url=base_url, timeout=120.0) for _ in range(workers)]

    def one(index_item: tuple[int, dict[str, Any]]) -> bool:
        index, item = index_item
        body = {"scope_id": scope, "kind": item["kind"], "text": item["text"]}
        for attempt in range(3):  # bounded retry: the peer answers 500 on SQLite "database is locked"
            response = clients[index % workers].post("/v1/memory/remember", json=body)
            if response.status_code == 200:
                return bool(response.json().get("changed", True))
            if response.status_code != 500 or attempt == 2:
                raise RuntimeError(f"peer remember: HTTP {response.status_code} {response.text[:500]}")
            stats.retries += 1
            time.sleep(0.5)
        raise AssertionError("unreachable")

    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for start_at in range(0, len(items), PEER_CHUNK):
                chunk = list(enumerate(items[start_at : start_at + PEER_CHUNK]))
                t0 = time.perf_counter()
                results = list(pool.map(one, chunk))
                stats.seconds += time.perf_counter() - t0
                stats.written += sum(results)
                stats.unchanged += len(results) - sum(results)
                show_peer_progress(stats)
    finally:
        for client in clients:
            client.close()


# -- measurement -----------------------------------------------------------------------------------


@dataclass
class Side:
    ms: list[float] = field(default_factory=list)
    ready: int = 0
    content_bytes: list[int] = field(default_factory=list)
    items: list[int] = field(default_factory=list)


def prepare(client: httpx.Client, scope: str, query: str, max_bytes: int) -> tuple[float, dict[str, Any]]:
    body = {"scope_id": scope, "query": query, "max_bytes": max_bytes}
    t0 = time.perf_counter()
    response = client.post("/v1/context/prepare", json=body)
    elapsed = (time.perf_counter() - t0) * 1000.0
    if response.status_code != 200:
        raise RuntimeError(f"prepare: HTTP {response.status_code} {response.text[:500]}")
    answer: dict[str, Any] = response.json()
    return elapsed, answer


def item_count(answer: dict[str, Any]) -> int:
    """Best-effort count of returned entries (format differs between the two products)."""
    if isinstance(answer.get("items"), list):
        return len(answer["items"])
    content = answer.get("content") or ""
    return content.count('"citation"') or content.count("\n- ")


def measure(
    targets: list[tuple[str, httpx.Client, str]], queries: list[str], calls: int, warmup: int, max_bytes: int
) -> dict[str, Side]:
    sides = {name: Side() for name, _, _ in targets}
    for i in range(warmup):
        for _, client, scope in targets:
            prepare(client, scope, queries[i % len(queries)], max_bytes)
    for i in range(calls):
        query = queries[i % len(queries)]
        order = targets if i % 2 == 0 else list(reversed(targets))
        for name, client, scope in order:
            elapsed, answer = prepare(client, scope, query, max_bytes)
            side = sides[name]
            side.ms.append(elapsed)
            side.ready += answer.get("status") == "ready"
            side.content_bytes.append(int(answer.get("content_bytes") or len((answer.get("content") or "").encode())))
            side.items.append(item_count(answer))
    return sides


def summarize(size: int, sides: dict[str, Side], calls: int) -> dict[str, Any]:
    row: dict[str, Any] = {"size": size}
    for name, side in sides.items():
        row[name] = {
            "p50_ms": median(side.ms),
            "p95_ms": percentile(side.ms, 95),
            "max_ms": max(side.ms),
            "ready": side.ready,
            "calls": calls,
            "mean_content_bytes": sum(side.content_bytes) / len(side.content_bytes),
            "mean_items": sum(side.items) / len(side.items),
        }
    return row


def print_row(row: dict[str, Any]) -> None:
    for name in ("peer", "ours"):
        r = row[name]
        print(
            f"  {name:4}: p50 {r['p50_ms']:8.2f} ms  p95 {r['p95_ms']:8.2f} ms  max "
            f"{r['max_ms']:8.2f} ms  ready {r['ready']}/{r['calls']}  mean content "
            f"{r['mean_content_bytes']:,.0f} B  mean items {r['mean_items']:.1f}"
        )
    print(
        f"  ratio peer/ours: p50 {row['peer']['p50_ms'] / row['ours']['p50_ms']:.2f}x  "
        f"p95 {row['peer']['p95_ms'] / row['ours']['p95_ms']:.2f}x",
        flush=True,
    )


# -- main ------------------------------------------------------------------------------------------


def run(
    args: argparse.Namespace, sizes: list[int], corpus: list[dict[str, Any]], queries: list[str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """Start both Servers, seed and measure each size; returns the summary rows and the notes."""
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    with contextlib.ExitStack() as stack:  # unwinds: clients, ours, peer, --keep copy, temporary directory
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pc-peer-bench-")))
        if args.keep is not None:
            stack.callback(keep_artifacts, args.keep, work)
        peer = stack.enter_context(running_peer(args.peer_bin, work, args.peer_env))
        ours = stack.enter_context(running_server(work / "ours.db", work, ready_timeout=READY_TIMEOUT_S))
        print(f"ready: peer {peer.ready_seconds:.2f} s, ours {ours.ready_seconds:.2f} s")
        pc = stack.enter_context(httpx.Client(base_url=peer.base_url, timeout=120.0))
        oc = stack.enter_context(http_client(ours))
        peer_scope = peer_create_scope(pc)
        create_scope(oc, SCOPE_ID)
        our_scope = SCOPE_ID
        seeded = 0
        peer_stats = PeerSeed()
        our_seconds = 0.0
        for size in sizes:
            peer_rate = peer_stats.written / peer_stats.seconds if peer_stats.seconds else None
            if size > args.cap and peer_rate is not None and peer_rate < args.min_peer_seed_rate:
                notes.append(
                    f"skipped {size:,}: peer seeding ran at {peer_rate:.1f}/s "
                    f"(< {args.min_peer_seed_rate:g}/s), capped at {args.cap:,}"
                )
                print(notes[-1])
                continue
            todo = corpus[seeded:size]
            our_seconds += seed_batches(oc, todo, our_scope).seconds
            seed_peer(peer.base_url, peer_scope, todo, args.peer_seed_workers, peer_stats)
            seeded = size
            print(
                f"\n== {size:,} memories: ours seeded in {our_seconds:.2f} s total "
                f"({seeded / our_seconds:,.0f}/s, batch {BATCH_SIZE}); peer in {peer_stats.seconds:.1f} s "
                f"total ({peer_stats.written / peer_stats.seconds:.1f}/s, one remember per memory, "
                f"{args.peer_seed_workers} concurrent clients; unchanged/deduplicated: "
                f"{peer_stats.unchanged}; retried after HTTP 500: {peer_stats.retries})",
                flush=True,
            )
            targets = [("peer", pc, peer_scope), ("ours", oc, our_scope)]
            row = summarize(size, measure(targets, queries, args.calls, args.warmup, args.max_bytes), args.calls)
            rows.append(row)
            print_row(row)
        sample_p = prepare(pc, peer_scope, queries[0], args.max_bytes)[1]
        sample_o = prepare(oc, our_scope, queries[0], args.max_bytes)[1]
        print(f"\nsample query: {queries[0]!r}")
        print(f"  peer answer head: {json.dumps(sample_p)[:600]}")
        print(f"  ours answer head: {json.dumps(sample_o)[:600]}")
    return rows, notes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peer-bin", type=Path, default=Path("/tmp/peer/bin"))
    parser.add_argument("--sizes", default="5000,10000")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--max-bytes", type=int, default=8000)
    parser.add_argument(
        "--peer-seed-workers",
        type=int,
        default=1,
        help="concurrent remember clients (>1 hits SQLite 'database is locked' 500s in the peer)",
    )
    parser.add_argument("--min-peer-seed-rate", type=float, default=50.0, help="memories/s; below it, cap sizes")
    parser.add_argument("--cap", type=int, default=5000)
    parser.add_argument(
        "--peer-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for the peer Server (repeatable)",
    )
    parser.add_argument("--keep", type=Path, default=None, help="copy server logs here at the end")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(",") if s.strip())
    if not sizes or args.calls < 1 or args.calls > 100_000:
        parser.error("need sizes and 1..100000 calls")

    version_code = "import importlib.metadata as m; print(m.version('powercontext'))"
    version_argv = [str(args.peer_bin / "python"), "-c", version_code]
    version = subprocess.run(version_argv, capture_output=True, text=True, timeout=60).stdout.strip()
    print(f"peer: powercontext {version} from {args.peer_bin}; ours: {MAIN_ROOT}; corpus: {CORPUS_SOURCE}")
    if args.peer_env:
        print(f"peer extra environment: {' '.join(args.peer_env)}")
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, calls={args.calls}, warmup={args.warmup}, "
        f"max_bytes={args.max_bytes}"
    )
    corpus = [{"text": item["text"], "kind": item["kind"]} for item in make_corpus(sizes[-1])]
    rows, notes = run(args, sizes, corpus, make_queries())

    print("\n| memories | peer p50 | peer p95 | ours p50 | ours p95 | p50 ratio | p95 ratio |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        p, o = row["peer"], row["ours"]
        print(
            f"| {row['size']:,} | {p['p50_ms']:.2f} ms | {p['p95_ms']:.2f} ms | {o['p50_ms']:.2f} ms | "
            f"{o['p95_ms']:.2f} ms | {p['p50_ms'] / o['p50_ms']:.2f}x | {p['p95_ms'] / o['p95_ms']:.2f}x |"
        )
    for note in notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
