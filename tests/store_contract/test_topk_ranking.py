"""The early-stopping top-k ranks exactly like ranking every match, on every backend (issue 39).

A Scope of a few thousand memories over a skewed vocabulary (a few words in most memories, most words rare),
written through the store's own writes (batches, single creates, revisions, forgets): each query's best ``k``
equal the first ``k`` of the full ranking (every matching memory scored: a limit past the Scope's size), with
the same scores, order and tie order.
"""

from __future__ import annotations

import random

from powercontext.store.base import MemoryEdit, NewMemory, Store
from powercontext.text.tokenize import query_terms

SCOPE = "team:topk"
VOCABULARY = [f"w{i}" for i in range(300)]
QUERIES = ["w0 w1", "w0 w7 w150", "w3 w40 w41 w299", "w2", "w1 w5 w9 w13 w17 w21", "w250 w0"]


def _text(rng: random.Random) -> str:
    # Zipf-like: w0 is in most memories, w299 in few.
    return " ".join(VOCABULARY[min(int(rng.paretovariate(0.9)) - 1, 299)] for _ in range(rng.randint(4, 24)))


def _write(store: Store, rng: random.Random) -> None:
    store.create_scope(SCOPE, "top-k", [])
    created = store.create_memories(SCOPE, [NewMemory(_text(rng), "note", ()) for _ in range(2_500)])
    for _ in range(40):
        created += store.create_memories(SCOPE, [NewMemory(_text(rng), "note", ())])
    for record in rng.sample(created, 60):
        store.revise_memory(SCOPE, record.key.artifact_id, 1, MemoryEdit(_text(rng)))
    for record in rng.sample(created, 30):
        store.change_lifecycle(SCOPE, record.key.artifact_id, "forget", None)


def test_top_k_equals_the_full_ranking_on_every_backend(store: Store) -> None:
    _write(store, random.Random(39))
    for query in QUERIES:
        terms = query_terms(query)
        full = [(h.record.key, h.score) for h in store.search_text(SCOPE, terms, 100_000)]
        assert len(full) > 50, query
        for k in (1, 10, 50):
            assert [(h.record.key, h.score) for h in store.search_text(SCOPE, terms, k)] == full[:k], (query, k)
