"""The local all-MiniLM-L6-v2 provider in-process: load time, RSS, single-query latency, batch throughput.

    .venv/bin/python bench/local_embeddings.py [--queries 200] [--sentences 1000] [--words 15]

No Server is involved: this measures the provider the Server would call. Sentences are the benchmark corpus's
project notes cut to ``--words`` words (memory-like); the query is a short host-style question.

OpenBLAS threads matter on a busy machine: with the default (one per core) a descheduled BLAS thread stalls
every small matmul, so compare with ``OPENBLAS_NUM_THREADS=1`` (the first line prints the setting).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import psutil

from _common import cpu_busy, make_corpus, median, percentile, verdict


def rss_mb() -> float:
    return float(psutil.Process(os.getpid()).memory_info().rss) / 2**20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--words", type=int, default=15)
    args = parser.parse_args()

    busy = cpu_busy()
    blas = os.environ.get("OPENBLAS_NUM_THREADS", "default")
    print(
        f"python {sys.version.split()[0]}; {os.cpu_count()} CPUs; OPENBLAS_NUM_THREADS={blas};"
        f" CPU busy before start: {busy or 0:.0%}"
    )
    rss_start = rss_mb()
    from powercontext.inference.local import LocalMiniLM

    rss_imported = rss_mb()
    provider = LocalMiniLM()
    t0 = time.perf_counter()
    provider.load()
    load_s = time.perf_counter() - t0
    rss_loaded = rss_mb()
    print(f"load: {load_s * 1000:.0f} ms; RSS {rss_start:.0f} MB at start, {rss_imported:.0f} MB after imports,")
    print(f"      {rss_loaded:.0f} MB after load (+{rss_loaded - rss_imported:.0f} MB for the model)")

    query = "why did we shard the session tokens"
    provider.embed([query])  # warm-up
    latencies = []
    for _ in range(args.queries):
        t0 = time.perf_counter()
        provider.embed([query])
        latencies.append((time.perf_counter() - t0) * 1000)
    print(f"single query ({len(query.split())} words), {args.queries} calls:"
          f" p50 {median(latencies):.1f} ms, p95 {percentile(latencies, 95):.1f} ms")

    texts = [" ".join(item["text"].split()[: args.words]) for item in make_corpus(args.sentences, seed=99)]
    provider.embed(texts[:64])  # warm-up
    t0 = time.perf_counter()
    provider.embed(texts)
    batch_s = time.perf_counter() - t0
    rate = len(texts) / batch_s
    print(f"batch: {len(texts)} sentences of {args.words} words in {batch_s:.2f} s = {rate:,.0f} sentences/s;"
          f" RSS after {rss_mb():.0f} MB")

    ok = verdict("single query p50", median(latencies), 30, "ms", at_least=False, digits=1)
    ok &= verdict("batch throughput", rate, 100, "sentences/s", at_least=True, digits=0)
    ok &= verdict("RSS added by the loaded model", rss_loaded - rss_imported, 150, "MB", at_least=False, digits=0)
    provider.close()
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
