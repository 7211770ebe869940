"""Measure the relevance floor's null distributions on a suite with several unrelated Scopes.

    .venv/bin/python tools/floor_calibration.py SUITE_DIR [--vectors]

Every query is scored against the memories of every *other* Scope of the suite, with that Scope's own term
statistics, as if it had been asked there: a pair of a query and a memory from an unrelated Scope is an unrelated
pair. Printed per suite, at the 50th, 90th, 95th and 99th percentiles:

- the full-text measures of ``search/relevance.py`` (IDF share, matched IDF mass) over the unrelated pairs that
  share at least one query term (a full-text search returns no other pairs, so these are the only ones its floor
  ever judges), and over all pairs;
- with ``--vectors``, the cosine of every unrelated pair under the local model (every memory is a vector hit).

The suite's labels are not read: the floors come from how unrelated text scores, not from which answers a
setting happens to keep (docs/evaluation.md, "The relevance floor").
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from powercontext.search.relevance import term_weight
from powercontext.text.normalize import normalize_query
from powercontext.text.tokenize import query_terms, term_set

PERCENTILES = (50, 90, 95, 99)


def _read(suite: Path) -> tuple[dict[str, list[str]], list[tuple[str, str]]]:
    memories: dict[str, list[str]] = defaultdict(list)
    for line in (suite / "memories.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            memories[row["scope_id"]].append(row["text"])
    queries = []
    for line in (suite / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            queries.append((row["scope_id"], row["query"]))
    return memories, queries


def _percentiles(values: list[float]) -> str:
    if not values:
        return "no pairs"
    found = np.percentile(np.asarray(values), PERCENTILES)
    return "  ".join(f"p{p} {v:.3f}" for p, v in zip(PERCENTILES, found, strict=True))


def full_text(memories: dict[str, list[str]], queries: list[tuple[str, str]]) -> None:
    held = {scope: [term_set(text) for text in texts] for scope, texts in memories.items()}
    counts = {scope: Counter(t for terms in sets for t in terms) for scope, sets in held.items()}
    shares: list[float] = []
    masses: list[float] = []
    pairs = 0
    for own, query in queries:
        terms = query_terms(normalize_query(query), 256)
        for scope, sets in held.items():
            if scope == own or not terms:
                continue
            weight = {t: term_weight(len(sets), counts[scope].get(t, 0)) for t in terms}
            total = sum(weight.values())
            for memory in sets:
                pairs += 1
                mass = sum(w for t, w in weight.items() if t in memory)
                if mass > 0:
                    shares.append(mass / total)
                    masses.append(mass)
    unmatched = [0.0] * (pairs - len(shares))
    print(f"full text: {pairs} unrelated pairs, {len(shares)} share a query term")
    print(f"  IDF share, pairs sharing a term: {_percentiles(shares)}")
    print(f"  IDF mass,  pairs sharing a term: {_percentiles(masses)}")
    print(f"  IDF share, all pairs:            {_percentiles(shares + unmatched)}")
    print(f"  IDF mass,  all pairs:            {_percentiles(masses + unmatched)}")


def vectors(memories: dict[str, list[str]], queries: list[tuple[str, str]]) -> None:
    from powercontext.inference.config import EmbeddingConfig, build_embedding_provider

    provider = build_embedding_provider(EmbeddingConfig(provider="local"))
    embedded = {scope: np.asarray(provider.embed(texts)) for scope, texts in memories.items()}
    cosines: list[float] = []
    for own, query in queries:
        vector = np.asarray(provider.embed([normalize_query(query)])[0])
        for scope, matrix in embedded.items():
            if scope != own:
                cosines.extend(float(c) for c in matrix @ vector)
    print(f"vectors ({provider.model_id}): {len(cosines)} unrelated pairs")
    print(f"  cosine: {_percentiles(cosines)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", type=Path)
    parser.add_argument("--vectors", action="store_true", help="also the local model's cosines (needs the model)")
    args = parser.parse_args()
    memories, queries = _read(args.suite)
    if len(memories) < 2:
        raise SystemExit("the suite needs at least two Scopes: unrelated pairs come from different Scopes")
    print(f"{args.suite}: {len(memories)} Scopes, {sum(map(len, memories.values()))} memories, {len(queries)} queries")
    full_text(memories, queries)
    if args.vectors:
        vectors(memories, queries)


if __name__ == "__main__":
    main()
