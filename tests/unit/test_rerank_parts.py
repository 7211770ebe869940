"""The pure parts of rerank and expansion: answer parsing, the deterministic reranker, widening."""

from __future__ import annotations

import pytest

from powercontext.domain.candidates import Candidate
from powercontext.domain.identity import ArtifactKey
from powercontext.inference.generation import InvalidOutput
from powercontext.recall.deterministic import LexicalCoverageReranker
from powercontext.recall.expansion import WidenExpander, parse_queries
from powercontext.recall.rerank import RerankSession, RerankTask, parse_ranks
from powercontext.recall.trace import RecallTrace
from powercontext.text.tokenize import term_set, terms


def candidate(i: int, text: str) -> Candidate:
    return Candidate(ArtifactKey("s", "atomic-memory", f"am_{i}", 1), "fact", text)


@pytest.mark.parametrize(
    ("answer", "count", "limit", "expected"),
    [
        ('{"ranks": [3, 1, 3, 9, 0, 2]}', 3, 16, [2, 0, 1]),  # first occurrence wins; out of range dropped
        ('```json\n{"ranks": [2]}\n```', 3, 16, [1]),
        ('{"ranks": []}', 3, 16, []),
        ('{"ranks": [1, 2, 3, 4, 5]}', 5, 2, [0, 1]),  # at most the limit
    ],
)
def test_parse_ranks(answer: str, count: int, limit: int, expected: list[int]) -> None:
    assert parse_ranks(answer, count, limit) == expected


@pytest.mark.parametrize("answer", ["first one", '{"rank": [1]}', '{"ranks": [true]}', '{"ranks": ["1"]}', "[1, 2]"])
def test_out_of_contract_rank_answers_are_invalid(answer: str) -> None:
    with pytest.raises(InvalidOutput):
        parse_ranks(answer, 3, 16)


def test_parse_queries() -> None:
    assert parse_queries('{"queries": [" a  b ", "a b", "", "c", "d", "e"]}') == ["a b", "c", "d"]
    for bad in ('{"queries": []}', '{"queries": [1]}', "nope", '{"queries": ["  "]}'):
        with pytest.raises(InvalidOutput):
            parse_queries(bad)


def test_term_set_is_the_set_of_terms() -> None:
    texts = (
        "Deploys DEPLOYMENT deploying the pipelines",
        "数据库连接池 pool",
        "snake_case x2 Straße",
        # ASCII-only text takes a faster path: punctuation, underscores, digits and case must split alike.
        "API_KEYS v1.2.3 path/to/file.py #4521 O'Brien's re-deploy, CamelCase:ALL-CAPS",
        "Café naïve RÉSUMÉ ΣΊΣΥΦΟΣ",
    )
    for text in texts:
        assert term_set(text) == frozenset(terms(text))
        assert term_set(text) == frozenset(terms(text))  # again: answered from the word cache


def test_deterministic_reranker_is_deterministic_and_prefers_coverage() -> None:
    pool = [candidate(0, "alpha only"), candidate(1, "beta gamma mentions alpha"), candidate(2, "unrelated")]
    reranker = LexicalCoverageReranker(coverage_weight=0.9)
    first = reranker.rerank(RerankTask("alpha beta gamma", pool, 2, None), RerankSession(0))
    assert first == reranker.rerank(RerankTask("alpha beta gamma", pool, 2, None), RerankSession(0))
    assert first.outcome == "selected" and first.order == (1, 0)
    # Weight 0 is the coarse order.
    coarse = LexicalCoverageReranker(coverage_weight=0.0).rerank(RerankTask("alpha", pool, 3, None), RerankSession(0))
    assert coarse.order == (0, 1, 2)
    record = reranker.evidence(None)
    assert record is not None and record.is_complete() and record.model is None and not record.model_backed


def test_widen_adds_the_vocabulary_the_best_candidates_share() -> None:
    seeds = [candidate(0, "ship cadence uses the release train"), candidate(1, "the release train is weekly")]
    widened = WidenExpander().round_query(1, "ship cadence", "s", seeds, RecallTrace(()))
    assert widened is not None and widened.startswith("ship cadence ")
    extra = widened.removeprefix("ship cadence ").split()
    assert extra[:2] == ["release", "train"]  # in both seeds
    assert "the" not in extra
    assert WidenExpander().round_query(1, "ship cadence", "s", [], RecallTrace(())) is None
