"""Cost amplification: one prepare within the published limits against everyone else's (issue 37, item 4).

Run: .venv/bin/python bench/cost_amplification.py [--references 64] [--per-scope 500] [--burst 40] [--parallel 8]
     [--idle 60]

A Server subprocess on loopback, full-text recall (``POWERCONTEXT_EMBEDDINGS=none``: no model in the way), SQLite.
A "heavy" Scope references ``--references`` others of ``--per-scope`` memories each; its prepare asks with an
8,192-character query of distinct terms (every word of the corpus, then made-up ones) and ``max_bytes`` 32,768. A
"normal" Scope of its own holds ``--per-scope`` memories and is asked the benchmark's ordinary queries.

Phases, each printed: the heavy prepare alone (median of 7); normal prepares and ``/health/live`` alone; then the
burst — ``--burst`` heavy prepares ``--parallel`` at a time — while one client sends normal prepares back to back
and another probes ``/health/live`` every 50 ms; the heavy answers by status (200 or 429 with ``Retry-After``);
the Server's RSS before the burst, right after it and ``--idle`` seconds later.

Targets (issue 37): heavy prepare alone ≤ 50 ms; during the burst a normal prepare p95 ≤ 100 ms and
``/health/live`` max ≤ 50 ms; RSS ``--idle`` s after the burst within 1.5× the pre-burst figure.
"""

from __future__ import annotations

import argparse
import random
import string
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from _common import (
    create_scope,
    describe_target,
    http_client,
    make_corpus,
    make_queries,
    median,
    percentile,
    running_server,
    seed_batches,
    verdict,
)

HEAVY_SCOPE = "bench-heavy"
NORMAL_SCOPE = "bench-normal"
QUERY_CHARS = 8192
MAX_BYTES = 32768


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def heavy_query(corpus_texts: list[str]) -> str:
    """8,192 characters of distinct terms: every corpus word first (each one matches), then made-up words."""
    words: list[str] = []
    seen: set[str] = set()
    for text in corpus_texts:
        for word in text.lower().split():
            word = word.strip(".,;:()'\"")
            if word.isalpha() and word not in seen:
                seen.add(word)
                words.append(word)
    rng = random.Random(37)
    query = " ".join(words)
    while len(query) < QUERY_CHARS:
        word = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(5, 9)))
        if word not in seen:
            seen.add(word)
            query += " " + word
    return query[:QUERY_CHARS].rsplit(" ", 1)[0]


def seed(client: httpx.Client, references: int, per_scope: int) -> list[str]:
    corpus = make_corpus(per_scope * 4)
    refs = [f"bench-ref-{i:02d}" for i in range(references)]
    for i, scope_id in enumerate(refs):
        create_scope(client, scope_id)
        start = (i * per_scope) % len(corpus)
        seed_batches(client, (corpus + corpus)[start : start + per_scope], scope_id)
    body = {"scope_id": HEAVY_SCOPE, "title": "heavy", "context_references": refs}
    client.post("/v1/scopes", json=body).raise_for_status()
    create_scope(client, NORMAL_SCOPE)
    seed_batches(client, corpus[:per_scope], NORMAL_SCOPE)
    return [c["text"] for c in corpus]


def prepare(client: httpx.Client, scope_id: str, query: str, max_bytes: int = 8000) -> tuple[float, httpx.Response]:
    t0 = time.perf_counter()
    response = client.post("/v1/context/prepare", json={"scope_id": scope_id, "query": query, "max_bytes": max_bytes})
    return (time.perf_counter() - t0) * 1000, response


def timed_get(client: httpx.Client, path: str) -> float:
    t0 = time.perf_counter()
    client.get(path).raise_for_status()
    return (time.perf_counter() - t0) * 1000


class Background:
    """Normal prepares back to back, and /health/live every 50 ms, until stopped."""

    def __init__(self, base_url: str, queries: list[str]) -> None:
        self.base_url = base_url
        self.queries = queries
        self.stop = threading.Event()
        self.normal_ms: list[float] = []
        self.normal_status: Counter[int] = Counter()
        self.live_ms: list[float] = []
        self.threads = [threading.Thread(target=self._normal), threading.Thread(target=self._live)]

    def _normal(self) -> None:
        with httpx.Client(base_url=self.base_url, timeout=120) as client:
            i = 0
            while not self.stop.is_set():
                ms, response = prepare(client, NORMAL_SCOPE, self.queries[i % len(self.queries)])
                self.normal_ms.append(ms)
                self.normal_status[response.status_code] += 1
                i += 1

    def _live(self) -> None:
        with httpx.Client(base_url=self.base_url, timeout=120) as client:
            while not self.stop.is_set():
                self.live_ms.append(timed_get(client, "/health/live"))
                time.sleep(0.05)

    def __enter__(self) -> Background:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()


def burst(base_url: str, query: str, count: int, parallel: int) -> tuple[Counter[str], list[float]]:
    outcomes: Counter[str] = Counter()
    heavy_ms: list[float] = []
    lock = threading.Lock()
    local = threading.local()

    def one(_: int) -> None:
        if not hasattr(local, "client"):
            local.client = httpx.Client(base_url=base_url, timeout=120)
        ms, response = prepare(local.client, HEAVY_SCOPE, query, MAX_BYTES)
        key = str(response.status_code)
        if response.status_code == 429:
            code = response.json()["error"]["code"]
            key += f" {code} Retry-After={response.headers.get('retry-after')}"
        with lock:
            outcomes[key] += 1
            heavy_ms.append(ms)

    with ThreadPoolExecutor(parallel) as pool:
        list(pool.map(one, range(count)))
    return outcomes, heavy_ms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--references", type=int, default=64)
    parser.add_argument("--per-scope", type=int, default=500)
    parser.add_argument("--burst", type=int, default=40)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument("--idle", type=float, default=60.0)
    args = parser.parse_args()
    print(describe_target())
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        env = {"POWERCONTEXT_EMBEDDINGS": "none"}
        with running_server(Path(tmp) / "bench.db", Path(tmp), env=env) as server, http_client(server) as client:
            t0 = time.perf_counter()
            texts = seed(client, args.references, args.per_scope)
            print(
                f"seeded {args.references} x {args.per_scope} memories (+{args.per_scope}) in "
                f"{time.perf_counter() - t0:.1f} s"
            )
            query = heavy_query(texts)
            normal = make_queries()
            print(f"heavy query: {len(query)} characters, {len(set(query.split()))} distinct terms")
            for q in normal[:5]:
                prepare(client, NORMAL_SCOPE, q)
            heavy_alone = []
            for _ in range(7):
                ms, response = prepare(client, HEAVY_SCOPE, query, MAX_BYTES)
                assert response.status_code == 200, response.text
                heavy_alone.append(ms)
            print(
                f"heavy prepare alone: median {median(heavy_alone):.1f} ms, "
                f"content {response.json()['content_bytes']} bytes"
            )
            quiet = [prepare(client, NORMAL_SCOPE, normal[i % len(normal)])[0] for i in range(40)]
            live_quiet = [timed_get(client, "/health/live") for _ in range(20)]
            print(
                f"normal prepare alone: p50 {median(quiet):.1f} ms, p95 {percentile(quiet, 95):.1f} ms; "
                f"/health/live p50 {median(live_quiet):.1f} ms"
            )
            pid = server.process.pid
            rss_before = rss_mib(pid)
            with Background(server.base_url, normal) as bg:
                t0 = time.perf_counter()
                outcomes, heavy_ms = burst(server.base_url, query, args.burst, args.parallel)
                burst_s = time.perf_counter() - t0
            rss_after = rss_mib(pid)
            print(
                f"burst: {args.burst} heavy prepares, {args.parallel} at a time, {burst_s:.1f} s; "
                f"answers {dict(outcomes)}; heavy p50 {median(heavy_ms):.1f} ms, max {max(heavy_ms):.1f} ms"
            )
            print(
                f"during the burst: normal prepare n={len(bg.normal_ms)} p50 {median(bg.normal_ms):.1f} ms, "
                f"p95 {percentile(bg.normal_ms, 95):.1f} ms, max {max(bg.normal_ms):.1f} ms, "
                f"statuses {dict(bg.normal_status)}; /health/live n={len(bg.live_ms)} "
                f"p50 {median(bg.live_ms):.1f} ms, max {max(bg.live_ms):.1f} ms"
            )
            time.sleep(args.idle)
            rss_idle = rss_mib(pid)
            print(
                f"RSS: before the burst {rss_before:.0f} MiB, right after {rss_after:.0f} MiB, "
                f"{args.idle:.0f} s later {rss_idle:.0f} MiB"
            )
            ok &= verdict("heavy prepare alone, median", median(heavy_alone), 50, "ms", at_least=False, digits=1)
            ok &= verdict(
                "normal prepare during the burst, p95",
                percentile(bg.normal_ms, 95),
                100,
                "ms",
                at_least=False,
                digits=1,
            )
            ok &= verdict("/health/live during the burst, max", max(bg.live_ms), 50, "ms", at_least=False, digits=1)
            ok &= verdict(f"RSS {args.idle:.0f} s after / before", rss_idle / rss_before, 1.5, "x", at_least=False)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
