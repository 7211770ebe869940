"""What a client command costs as a fresh process: ``memory add``, ``memory search``, ``context prepare``.

Run: .venv/bin/python bench/client_command_startup.py [--runs 11] [--top 15]

A real Server on loopback (a fresh SQLite file, one Scope, a few memories); each command then runs as a new
``powercontext`` process, as a user or a script runs it, and is timed from spawn to exit: wall time and the
child's CPU time (user + sys, from ``RUSAGE_CHILDREN``). Medians of ``--runs`` processes. On a busy machine the
wall time grows with the queue for a core while the CPU time stays near what the command itself needs, so both
are printed, with the load average before and after. ``python -X importtime`` of one ``memory search`` then
lists the imports that are left, largest first (cumulative microseconds, as importtime reports them; importtime
itself roughly doubles them).

Bytecode: with ``PYTHONDONTWRITEBYTECODE`` set (as on the development machines) Python never writes
``__pycache__``, and an editable checkout is compiled again at every start (~60 ms); an installed wheel has
its bytecode. So the package is compiled once here first, as pip does at install.

Target (issue 41): each command <= 250 ms wall, median, on an idle machine.
"""

from __future__ import annotations

import argparse
import compileall
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import powercontext
from _common import describe_target, http_client, running_server

TARGET_MS = 250.0
SCOPE = "bench:cli"
VENV_BIN = Path(sys.executable).parent
COMMANDS = {
    "memory add": ["memory", "add", "-s", SCOPE, "The billing worker retries failed charges three times."],
    "memory search": ["memory", "search", "-s", SCOPE, "billing retries"],
    "context prepare": ["context", "prepare", "-s", SCOPE, "-q", "how does billing retry?"],
}


def one_run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one process, spawn to exit; a failing command stops the benchmark."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, check=False)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace')}")
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu


def series(name: str, argv: list[str], env: dict[str, str], runs: int) -> float:
    one_run(argv, env)  # page cache warm
    timed = [one_run(argv, env) for _ in range(runs)]
    walls = sorted(w for w, _ in timed)
    cpu = statistics.median(c for _, c in timed)
    print(
        f"{name:<26} wall median {statistics.median(walls):6.1f} ms (min {walls[0]:6.1f}, max {walls[-1]:6.1f})"
        f"  CPU user+sys median {cpu:6.1f} ms"
    )
    return statistics.median(walls)


def top_imports(argv: list[str], env: dict[str, str], count: int) -> None:
    """The ``count`` largest top-level imports of one run (``-X importtime``, cumulative)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "powercontext", *argv], env=env, capture_output=True, check=True
    )
    rows = []
    for line in done.stderr.decode().splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if match and len(match[3]) <= 2:  # imported by the program itself, not by another module
            rows.append((int(match[2]), match[4]))
    total = sum(us for us, _ in rows)
    print(f"\npython -X importtime -m powercontext {' '.join(argv[:2])}: {total / 1000:.1f} ms of imports; largest:")
    for us, module in sorted(rows, reverse=True)[:count]:
        print(f"  {us / 1000:7.1f} ms  {module}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    print(describe_target())
    compileall.compile_dir(Path(powercontext.__file__).parent, quiet=1)
    floor = [one_run([sys.executable, "-c", "pass"], dict(os.environ))[0] for _ in range(args.runs)]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'python -c pass (floor)':<26} wall median {statistics.median(floor):6.1f} ms")
    with tempfile.TemporaryDirectory() as tmp, running_server(Path(tmp) / "bench.db", Path(tmp)) as server:
        with http_client(server) as client:
            client.post("/v1/scopes", json={"scope_id": SCOPE, "title": "CLI start-up"}).raise_for_status()
        env = {**os.environ, "POWERCONTEXT_URL": server.base_url}
        env.pop("POWERCONTEXT_TOKEN", None)
        script = str(VENV_BIN / "powercontext")
        medians = {name: series(name, [script, *argv], env, args.runs) for name, argv in COMMANDS.items()}
        top_imports(COMMANDS["memory search"], env, args.top)
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name, wall in medians.items():
        verdict = "meets" if wall <= TARGET_MS else "misses"
        print(f"target: {name} <= {TARGET_MS:.0f} ms wall (idle machine) -> {verdict} ({wall:.1f} ms)")


if __name__ == "__main__":
    main()
