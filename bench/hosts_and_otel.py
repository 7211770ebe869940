"""Host hook round trip at 10,000 memories, and the cost of the OpenTelemetry SDK on prepare.

Run: .venv/bin/python bench/hosts_and_otel.py [--size 10000] [--hooks 60] [--calls 300] [--rounds 3]

1. Hook: a Server on a database of ``--size`` memories; the Claude Code hook is run ``--hooks`` times
   as the host runs it (``python -m powercontext.hosts.hook claude-code``, hook JSON on stdin), timed
   from process start to exit. The bare interpreter start (``python -c pass``) is printed beside it.
2. OTel: two Servers on copies of the same database, one plain, one with the OpenTelemetry SDK
   recording every span into a BatchSpanProcessor whose exporter drops them (a no-op exporter); prepare
   calls alternate between them with the same queries, over ``--rounds`` freshly started pairs (pooled).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from _common import (
    SCOPE_ID,
    create_scope,
    describe_target,
    free_port,
    http_client,
    make_corpus,
    make_queries,
    median,
    percentile,
    running_server,
    seed_batches,
    verdict,
    wait_ready,
)

HOOK_P50_TARGET_MS = 150.0
OTEL_RATIO_TARGET = 1.05

OTEL_SERVER = """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

class Drop(SpanExporter):
    def export(self, spans):
        return SpanExportResult.SUCCESS

provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(Drop()))
trace.set_tracer_provider(provider)
from powercontext.server.run import serve
from powercontext.settings import Settings
serve(Settings.from_env(db={db!r}, host='127.0.0.1', port={port}))
"""


def otel_round(db: Path, otel_db: Path, tmp: Path, queries: list[str], calls: int) -> dict[str, list[float]]:
    """One plain and one OTel-SDK Server, started afresh; ``calls`` prepares each, alternating which goes first."""
    port = free_port()
    log_path = tmp / f"otel-server-{port}.log"
    samples: dict[str, list[float]] = {"plain": [], "otel": []}
    with log_path.open("wb") as log:
        spawned = time.perf_counter()
        otel = subprocess.Popen(
            [sys.executable, "-c", OTEL_SERVER.format(db=str(otel_db), port=port)], stdout=log, stderr=log
        )
        try:
            otel_url = f"http://127.0.0.1:{port}"
            wait_ready(otel, otel_url + "/health/ready", spawned, 60.0, log_path, "otel server")
            with (
                running_server(db, tmp) as plain,
                http_client(plain) as plain_client,
                httpx.Client(base_url=otel_url, timeout=120) as otel_client,
            ):
                for i in range(calls + 20):
                    order = [("plain", plain_client), ("otel", otel_client)]
                    if i % 2:
                        order.reverse()
                    for name, c in order:
                        body = {"scope_id": SCOPE_ID, "query": queries[i % len(queries)], "max_bytes": 8000}
                        t0 = time.perf_counter()
                        r = c.post("/v1/context/prepare", json=body)
                        elapsed = (time.perf_counter() - t0) * 1000.0
                        r.raise_for_status()
                        if i >= 20:
                            samples[name].append(elapsed)
        finally:
            otel.terminate()
            otel.wait(timeout=15)
    return samples


def time_hook(url: str, project: Path, prompt: str, env: dict[str, str]) -> tuple[float, bool]:
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "cwd": str(project), "prompt": prompt})
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "powercontext.hosts.hook", "claude-code"],
        input=payload.encode(),
        capture_output=True,
        env={**env, "POWERCONTEXT_URL": url},
    )
    elapsed = (time.perf_counter() - t0) * 1000.0
    return elapsed, bool(done.stdout)


def bare_python_ms(runs: int = 20) -> float:
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        samples.append((time.perf_counter() - t0) * 1000.0)
    return median(samples)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--hooks", type=int, default=60)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3, help="fresh Server pairs for the OTel part; --calls is split")
    args = parser.parse_args()
    print(describe_target())
    ok = True
    queries = make_queries()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        db = tmp / "bench.db"
        with running_server(db, tmp) as server, http_client(server) as client:
            create_scope(client)
            seed_batches(client, make_corpus(args.size))
            project = tmp / "project"
            (project / ".git").mkdir(parents=True)
            (project / ".powercontext.toml").write_text(f'scope_id = "{SCOPE_ID}"\n', encoding="utf-8")
            env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
            env["POWERCONTEXT_HOOK_STATE_DIR"] = str(tmp / "state")
            for q in queries[:5]:
                time_hook(server.base_url, project, q, env)
            hook_ms, injected = [], 0
            for i in range(args.hooks):
                elapsed, did = time_hook(server.base_url, project, queries[i % len(queries)], env)
                hook_ms.append(elapsed)
                injected += did
            print(
                f"hook round trip at {args.size:,} memories: p50 {median(hook_ms):.1f} ms, "
                f"p95 {percentile(hook_ms, 95):.1f} ms ({injected}/{args.hooks} injected); "
                f"bare `python -c pass` p50 {bare_python_ms():.1f} ms"
            )
            ok &= verdict("hook round trip p50", median(hook_ms), HOOK_P50_TARGET_MS, "ms", at_least=False)

        otel_db = tmp / "otel.db"
        shutil.copy(db, otel_db)
        samples: dict[str, list[float]] = {"plain": [], "otel": []}
        per_round = max(1, args.calls // args.rounds)
        for round_no in range(args.rounds):
            # Fresh processes each round: one process pair's own luck moves its p50 by a few percent.
            this_round = otel_round(db, otel_db, tmp, queries, per_round)
            for name, values in this_round.items():
                samples[name] += values
            print(
                f"round {round_no + 1}: OTel/plain p50 {median(this_round['otel']) / median(this_round['plain']):.3f}"
            )
        plain_p50, otel_p50 = median(samples["plain"]), median(samples["otel"])
        print(
            f"prepare p50 at {args.size:,}: plain {plain_p50:.2f} ms, OTel SDK (no-op exporter) "
            f"{otel_p50:.2f} ms over {args.rounds} rounds x {per_round} alternating calls each"
        )
        ratio = otel_p50 / plain_p50
        ok &= verdict("OTel/plain prepare p50 ratio", ratio, OTEL_RATIO_TARGET, "x", at_least=False, digits=3)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
