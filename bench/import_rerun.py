"""``powercontext memory import`` as a user runs it: a fresh import, then the same file again (all replays).

Run: .venv/bin/python bench/import_rerun.py [--lines 20000] [--rounds 3]

Each round: a fresh database and Server subprocess, one Scope, the real CLI as a subprocess on a JSONL file
of ``--lines`` corpus lines (each line then carries a derived idempotency key), timed end to end; then the
same command again, where every line already exists. Then the cost of the keys alone, over HTTP only
(bodies encoded before timing): the same lines through ``POST …/atomic-memory/batch`` without keys (what
the import sent before), with keys, and with the same keys again (all replays). Medians over the rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import create_scope, describe_target, http_client, make_corpus, median, running_server, seed_batches


def run_import(source: Path, scope_id: str, url: str) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env["POWERCONTEXT_URL"] = url
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "powercontext", "memory", "import", str(source), "-s", scope_id],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise RuntimeError(f"import failed: {result.stderr[-500:]}")
    return elapsed, result.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(describe_target())
    corpus = make_corpus(args.lines, seed=3)
    keyed_corpus = [{**item, "idempotency_key": f"bench:{i}"} for i, item in enumerate(corpus)]
    fresh: list[float] = []
    rerun: list[float] = []
    unkeyed: list[float] = []
    keyed: list[float] = []
    replayed: list[float] = []
    with tempfile.TemporaryDirectory(prefix="pc-bench-") as tmp:
        work = Path(tmp)
        source = work / "memories.jsonl"
        source.write_text("".join(json.dumps(item) + "\n" for item in corpus), encoding="utf-8")
        for round_number in range(args.rounds):
            with running_server(work / f"import-{round_number}.db", work) as server, http_client(server) as client:
                create_scope(client, "bench-import")
                create_scope(client, "bench-unkeyed")
                create_scope(client, "bench-keyed")
                seconds, first = run_import(source, "bench-import", server.base_url)
                fresh.append(seconds)
                seconds, second = run_import(source, "bench-import", server.base_url)
                rerun.append(seconds)
                unkeyed.append(seed_batches(client, corpus, "bench-unkeyed").seconds)
                keyed.append(seed_batches(client, keyed_corpus, "bench-keyed").seconds)
                replayed.append(seed_batches(client, keyed_corpus, "bench-keyed").seconds)
            print(f"round {round_number + 1}: first run: {first!r}; second run: {second!r}")
    n = args.lines
    print(f"fresh import (CLI, keyed): median {median(fresh):.2f} s = {n / median(fresh):,.0f} lines/s")
    print(f"re-run, all lines exist (CLI): median {median(rerun):.2f} s = {n / median(rerun):,.0f} lines/s")
    for label, values in (("without keys", unkeyed), ("with keys", keyed), ("with keys, all replays", replayed)):
        print(f"batch route {label} (HTTP only): median {median(values):.2f} s = {n / median(values):,.0f} lines/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
