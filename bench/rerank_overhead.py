"""What rerank adds to prepare: listwise against a chat server with a fixed latency, and the deterministic
reranker's own cost.

    .venv/bin/python bench/rerank_overhead.py [--size 10000] [--calls 200] [--latency-ms 50] [--rounds 3]

1. Three Servers on the same corpus (each its own database), measured in one run, alternating: rerank off,
   ``POWERCONTEXT_RERANK=listwise`` against ``tests/chat_server.py`` answering every call after a fixed
   ``--latency-ms`` (a real process on loopback), and ``POWERCONTEXT_RERANK=deterministic``. Target:
   listwise p50 minus the chat latency ≤ 1.25 × the rerank-off p50.

   A listwise prepare leaves the machine idle for the chat latency, and on this virtual machine the work after an
   idle spell runs slower (cold caches: a rerank-off prepare measured after a 50 ms pause is ~0.5-1.2 ms slower
   than one right after the previous prepare). That is the machine, not the pipeline, so the rerank-off Server
   is measured both ways in the same rotation: ``off`` back to back, and ``off, paced`` after a client-side
   pause as long as the chat latency. The verdict compares against the paced figure; both ratios are printed.
2. ``LexicalCoverageReranker.rerank`` alone on 30-candidate pools of the corpus: target ≤ 1 ms p50.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from _common import (
    BENCH_DIR,
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
)
from powercontext.domain.candidates import Candidate
from powercontext.inference.generation import ChatMessage, OpenAICompatibleGeneration
from powercontext.recall.deterministic import LexicalCoverageReranker
from powercontext.recall.rerank import RerankSession, RerankTask
from prepare_latency import prepare_once

REPO = BENCH_DIR.parent
WARMUP = 20
OVERHEAD_TARGET = 1.25  # relaxed from 1.15 when providers moved to httpx (issue 24)
DETERMINISTIC_TARGET_MS = 1.0


def start_chat(latency_ms: float, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.chat_server", "--port", str(port)], cwd=REPO, stdout=out, stderr=out
        )
    origin = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(origin + "/health", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.02)
    step = {"mode": "rank", "keyword": "", "reverse": True, "delay_s": latency_ms / 1000}
    httpx.post(origin + "/control", json={"default": step}, timeout=5).raise_for_status()
    return process, origin + "/v1"


def direct_call_p50(base_url: str, calls: int) -> float:
    """What one call costs a client with nothing else around it: the fake server's own latency floor."""
    client = OpenAICompatibleGeneration(base_url)
    lines = "\n".join(f"[{i}] the deploy pipeline note number {i} about the ledger" for i in range(1, 31))
    messages = [ChatMessage("system", "rank " * 80), ChatMessage("user", f"Request:\nq\n\nCandidates:\n{lines}")]
    samples = []
    try:
        for _ in range(calls):
            t0 = time.perf_counter()
            client.complete("bench", messages, {"temperature": 0.0}, 10.0)
            samples.append((time.perf_counter() - t0) * 1000)
    finally:
        client.close()
    return median(samples)


SERIES = ("off", "off, paced", "listwise", "deterministic")


def server_overhead(size: int, calls: int, latency_ms: float, rounds: int) -> bool:
    corpus, queries = make_corpus(size), make_queries()
    quiet = {"POWERCONTEXT_LOG_LEVEL": "warning", "POWERCONTEXT_EMBEDDINGS": "none"}
    with tempfile.TemporaryDirectory(prefix="pc-rerank-") as tmp:
        work = Path(tmp)
        chat, base_url = start_chat(latency_ms, work / "chat.log")
        listwise = {
            **quiet,
            "POWERCONTEXT_GENERATION": "openai-compatible",
            "POWERCONTEXT_GENERATION_BASE_URL": base_url,
            "POWERCONTEXT_GENERATION_MODEL": "bench",
            "POWERCONTEXT_RERANK": "listwise",
        }
        deterministic = {**quiet, "POWERCONTEXT_RERANK": "deterministic"}
        samples: dict[str, list[float]] = {name: [] for name in SERIES}
        per_round = max(1, calls // rounds)
        try:
            for round_no in range(rounds):
                # Fresh Server processes each round (same databases): a process's own layout and cache luck
                # moves its p50 by a few percent.
                with (
                    running_server(work / "off.db", work, env=quiet) as off_server,
                    running_server(work / "lw.db", work, env=listwise) as lw_server,
                    running_server(work / "det.db", work, env=deterministic) as det_server,
                    http_client(off_server) as off,
                    http_client(lw_server) as lw,
                    http_client(det_server) as det,
                ):
                    if round_no == 0:
                        for client in (off, lw, det):
                            create_scope(client)
                            seed_batches(client, corpus)
                    # name -> (client, pause before each request in seconds)
                    series = {
                        "off": (off, 0.0),
                        "off, paced": (off, latency_ms / 1000),
                        "listwise": (lw, 0.0),
                        "deterministic": (det, 0.0),
                    }
                    for i in range(WARMUP + per_round):
                        order = SERIES[i % len(SERIES) :] + SERIES[: i % len(SERIES)]
                        for name in order:
                            client, pause = series[name]
                            time.sleep(pause)
                            elapsed, _ = prepare_once(client, queries[i % len(queries)], 8000, True)
                            if i >= WARMUP:
                                samples[name].append(elapsed)
            direct = direct_call_p50(base_url, calls)
        finally:
            chat.terminate()
            chat.wait(10)
    print(f"\n{size:,} memories, {rounds} rounds x {per_round} calls each, chat latency {latency_ms:.0f} ms")
    for name, values in samples.items():
        print(f"  {name:>14}: p50 {median(values):.2f} ms  p95 {percentile(values, 95):.2f} ms")
    print(f"  one direct call to the chat server (its {latency_ms:.0f} ms sleep included): p50 {direct:.2f} ms")
    off_p50, paced_p50 = median(samples["off"]), median(samples["off, paced"])
    listwise_p50 = median(samples["listwise"])
    print(f"  (listwise p50 - chat latency) / back-to-back off p50: {(listwise_p50 - latency_ms) / off_p50:.3f} x")
    print(f"  (listwise p50 - direct call p50) / paced off p50: {(listwise_p50 - direct) / paced_p50:.3f} x")
    ratio = (listwise_p50 - latency_ms) / paced_p50
    return verdict(
        "(listwise p50 - chat latency) / paced off p50", ratio, OVERHEAD_TARGET, "x", at_least=False, digits=3
    )


def deterministic_cost(pools: int = 500) -> bool:
    """Cold: every pool is 30 texts the reranker has not seen (its per-text term cache is empty); warm: the same
    pools again, as when the same memories recur across prepares. The target is judged on cold."""
    texts = [item["text"] for item in make_corpus(pools * 30)]
    queries = make_queries()
    reranker = LexicalCoverageReranker()
    result = {}
    for phase in ("cold", "warm"):
        samples = []
        for i in range(pools):
            pool = [Candidate(None, "fact", t) for t in texts[i * 30 : (i + 1) * 30]]
            t0 = time.perf_counter()
            reranker.rerank(RerankTask(queries[i % len(queries)], pool, 16, None), RerankSession(0))
            samples.append((time.perf_counter() - t0) * 1000)
        result[phase] = samples
        print(f"\ndeterministic rerank of 30 candidates, {pools} pools, {phase}")
        print(f"  p50 {median(samples):.3f} ms  p95 {percentile(samples, 95):.3f} ms")
    cold = median(result["cold"])
    return verdict("deterministic rerank p50, cold", cold, DETERMINISTIC_TARGET_MS, "ms", at_least=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--rounds", type=int, default=3, help="fresh Server sets; --calls is split among them")
    args = parser.parse_args()
    print(describe_target())
    ok = deterministic_cost()
    ok &= server_overhead(args.size, args.calls, args.latency_ms, args.rounds)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
