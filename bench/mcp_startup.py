"""How long an agent host waits for ``powercontext mcp`` at the start of every session.

Run: .venv/bin/python bench/mcp_startup.py [--starts 20] [--compare /work/main/.venv/bin/powercontext]

Each start spawns the ``powercontext`` console script of this venv (``powercontext mcp``, as hosts run it),
writes one ``initialize`` request and times spawn -> the answer's line on stdout. A second series does the
same with ``python -m powercontext mcp``, and a third times ``tools/list`` right after ``initialize`` (the
host's next request). Cold starts: a new process each time (the OS page cache is warm after the first).
Target (issue 21): initialize answered in <= 150 ms, p50 of 20 starts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

VENV_BIN = Path(sys.executable).parent
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
TARGET_MS = 150.0


def one_start(command: list[str], then_list: bool) -> tuple[float, float | None]:
    """(ms to the initialize answer, ms to the tools/list answer or None)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        initialized = (time.perf_counter() - started) * 1000
        assert answer["id"] == 1 and "result" in answer, answer
        listed = None
        if then_list:
            process.stdin.write(json.dumps(TOOLS_LIST).encode() + b"\n")
            process.stdin.flush()
            assert json.loads(process.stdout.readline())["id"] == 2
            listed = (time.perf_counter() - started) * 1000
        return initialized, listed
    finally:
        process.stdin.close()
        process.wait(timeout=10)


def series(name: str, command: list[str], starts: int, then_list: bool = False) -> float:
    one_start(command, then_list)  # warm the page cache and the bytecode cache
    runs = [one_start(command, then_list) for _ in range(starts)]
    first = sorted(r[0] for r in runs)
    p50 = statistics.median(first)
    line = f"{name:<34} initialize p50 {p50:7.1f} ms  min {first[0]:6.1f}  max {first[-1]:6.1f}"
    if then_list:
        line += f"  | tools/list answered p50 {statistics.median(r[1] or 0.0 for r in runs):7.1f} ms"
    print(line)
    return p50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--compare", help="another `powercontext` console script (e.g. main's venv) to time alike")
    args = parser.parse_args()
    floor = []
    for _ in range(args.starts):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        floor.append((time.perf_counter() - started) * 1000)
    print(f"{'python -c pass (interpreter floor)':<34} p50 {statistics.median(floor):7.1f} ms")
    script = series("powercontext mcp", [str(VENV_BIN / "powercontext"), "mcp"], args.starts, then_list=True)
    series("python -m powercontext mcp", [sys.executable, "-m", "powercontext", "mcp"], args.starts)
    if args.compare:
        other = series(f"{args.compare} mcp", [args.compare, "mcp"], args.starts, then_list=True)
        print(f"ratio: this build's initialize p50 is {script / other:.2f}x the compared one's")
    verdict = "meets" if script <= TARGET_MS else "misses"
    print(f"target: initialize p50 <= {TARGET_MS:.0f} ms -> {verdict} ({script:.1f} ms)")


if __name__ == "__main__":
    main()
