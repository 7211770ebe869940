"""Server start time and RSS with 100,000 memories already on disk.

Run: .venv/bin/python bench/startup_rss.py [--memories 100000] [--starts 5] [--calls 200] [--rebuild]

The database is built once (batch import through a Server) and cached under bench/results/
(gitignored); a marker file written after a clean build tells a later run it can reuse it. Each
start spawns a fresh process and times spawn -> first 200 on /health/ready, then reads the
process RSS (psutil), runs ``--calls`` sequential prepare calls and reads the RSS again.
The cached file is in the OS page cache after the build, so these are warm-cache starts.
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import sys
import tempfile
from pathlib import Path

import psutil  # type: ignore[import-untyped]

from _common import (
    BENCH_DIR,
    CORPUS_SEED,
    CORPUS_VERSION,
    RESULTS_DIR,
    SCOPE_ID,
    create_scope,
    describe_target,
    http_client,
    make_corpus,
    make_queries,
    median,
    running_server,
    seed_batches,
    verdict,
)

READY_TARGET_S = 2.0
RSS_TARGET_MB = 200.0
MB = 1024 * 1024


def _db_files(db: Path) -> list[Path]:
    return [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")]


def _active_count(db: Path) -> int:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        row = conn.execute("SELECT count(*) FROM artifacts WHERE state = 'active'").fetchone()
    return int(row[0])


def _cache_key(memories: int) -> str:
    """What the cached file's contents depend on: the corpus, the schema and the store's write path."""
    from powercontext.store.core import memory_writes, terms
    from powercontext.store.sqlite import migrations, store

    digest = hashlib.sha256(f"{memories}:{CORPUS_SEED}:{CORPUS_VERSION}".encode())
    for module in (migrations, store, memory_writes, terms):
        digest.update(Path(module.__file__ or "").read_bytes())
    return digest.hexdigest()[:12]


def cached_db(memories: int, rebuild: bool, work: Path) -> Path:
    """The cached database with ``memories`` active memories; built if missing, partial or stale."""
    RESULTS_DIR.mkdir(exist_ok=True)
    db = RESULTS_DIR / f"startup-{memories}-{_cache_key(memories)}.db"
    marker = db.with_name(db.name + ".complete")
    shown = db.relative_to(BENCH_DIR.parent)
    if not rebuild and marker.exists() and db.exists() and _active_count(db) == memories:
        print(f"reusing cached database {shown}")
        return db
    for path in [*_db_files(db), marker]:
        path.unlink(missing_ok=True)
    print(f"building {shown} with {memories:,} memories ...")
    with running_server(db, work) as server, http_client(server) as client:
        create_scope(client)
        seeded = seed_batches(client, make_corpus(memories))
    print(f"  batch import: {seeded.per_second:,.0f} memories/s ({seeded.seconds:.1f} s)")
    marker.write_text(f"{memories}\n")
    return db


def one_start(db: Path, calls: int, work: Path) -> tuple[float, float, float]:
    """(seconds to ready, RSS MB when ready, RSS MB after ``calls`` prepares)."""
    queries = make_queries()
    with running_server(db, work) as server, http_client(server) as client:
        proc = psutil.Process(server.process.pid)
        rss_ready = proc.memory_info().rss / MB
        for i in range(calls):
            body = {"scope_id": SCOPE_ID, "query": queries[i % len(queries)], "max_bytes": 8000}
            client.post("/v1/context/prepare", json=body).raise_for_status()
        rss_after = proc.memory_info().rss / MB
    return server.ready_seconds, rss_ready, rss_after


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached database")
    args = parser.parse_args()
    print(describe_target())
    with tempfile.TemporaryDirectory(prefix="pc-bench-") as tmp:
        work = Path(tmp)
        db = cached_db(args.memories, args.rebuild, work)
        size_mb = sum(p.stat().st_size for p in _db_files(db) if p.exists()) / MB
        print(f"database on disk: {size_mb:.1f} MB")
        results = [one_start(db, args.calls, work) for _ in range(args.starts)]
    for i, (ready, rss_ready, rss_after) in enumerate(results, 1):
        print(
            f"start {i}: ready in {ready * 1000:.0f} ms, RSS {rss_ready:.1f} MB,"
            f" after {args.calls} prepares {rss_after:.1f} MB"
        )
    ready_s = median([r[0] for r in results])
    rss_ready, rss_after = max(r[1] for r in results), max(r[2] for r in results)
    ok = verdict(
        f"median spawn-to-ready ({args.starts} starts)", ready_s, READY_TARGET_S, "s", at_least=False, digits=3
    )
    ok &= verdict("max RSS after startup", rss_ready, RSS_TARGET_MB, "MB", at_least=False, digits=1)
    ok &= verdict(f"max RSS after {args.calls} prepares", rss_after, RSS_TARGET_MB, "MB", at_least=False, digits=1)
    print("\nALL PASS" if ok else "\nSOME TARGETS FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
