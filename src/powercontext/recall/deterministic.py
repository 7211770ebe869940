"""A declared deterministic, non-model reranker: coarse rank blended with IDF-weighted query coverage.

Policy ``powercontext.memory.rerank.lexical-coverage.v1``. For each Scope's coarse pool (fts or hybrid
order), a candidate scores

    (1 - w) * rrf(rank) / rrf(1)  +  w * coverage

where ``rrf(rank) = 1 / (60 + rank)`` keeps the search's own judgement, and ``coverage`` is the share of the
query's distinct terms (the same stemmed terms full-text search uses) that the candidate contains, each term
weighted by its IDF within the pool, so a rare term the candidate shares counts more than a common one.
The ``limit`` best are kept, ties in coarse order. Pure arithmetic on the pool: no provider, no I/O; the
same pool and query always give the same order.
"""

from __future__ import annotations

import math
from functools import lru_cache

from powercontext.prompts.definitions import ResolvedPrompt
from powercontext.recall.rerank import RerankConfigRecord, RerankResult, RerankSession, RerankTask
from powercontext.text.tokenize import query_terms, term_set

LEXICAL_POLICY_ID = "powercontext.memory.rerank.lexical-coverage.v1"
DEFAULT_COVERAGE_WEIGHT = 0.5
RRF_K = 60


@lru_cache(maxsize=16384)
def _term_set(text: str) -> frozenset[str]:
    """A memory's distinct terms; the same memories recur across prepares, so each is tokenized once."""
    return term_set(text)


@lru_cache(maxsize=256)
def _query_terms(query: str) -> tuple[str, ...]:
    """A query's distinct terms; a prepare's rerank and any retry of the same query reuse them."""
    return tuple(query_terms(query))


class LexicalCoverageReranker:
    model_backed = False
    prompt_key: str | None = None
    max_requests = 0
    default_weight = DEFAULT_COVERAGE_WEIGHT

    def __init__(self, candidate_limit: int = 30, coverage_weight: float = DEFAULT_COVERAGE_WEIGHT) -> None:
        self.candidate_limit = candidate_limit
        self.coverage_weight = coverage_weight

    def evidence(self, prompt: ResolvedPrompt | None) -> RerankConfigRecord | None:
        settings = {"candidate_limit": self.candidate_limit, "coverage_weight": self.coverage_weight}
        return RerankConfigRecord(LEXICAL_POLICY_ID, None, settings, 0.0, 0, None, False)

    def rerank(self, task: RerankTask, session: RerankSession) -> RerankResult:
        wanted, candidates = _query_terms(task.query), task.candidates
        if not wanted or not candidates:
            return RerankResult(None, "fallback", "empty_selection")
        term_sets = [_term_set(c.text) for c in candidates]
        n = len(candidates)
        idf = {t: math.log(1.0 + (n + 1) / (0.5 + sum(t in s for s in term_sets))) for t in wanted}
        total = sum(idf.values())
        w = self.coverage_weight
        scores = [
            (1.0 - w) * (RRF_K + 1) / (RRF_K + rank) + w * sum(idf[t] for t in wanted if t in s) / total
            for rank, s in enumerate(term_sets, start=1)
        ]
        order = sorted(range(n), key=lambda i: (-scores[i], i))[: task.limit]
        return RerankResult(tuple(order), "selected", "none")
