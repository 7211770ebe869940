"""``auto`` search with an in-process model: the query is embedded while the full-text search runs.

The readers here stand in for a store (they sleep the way a slow search does, releasing the GIL); the model is
an in-process provider, which is what the overlap is for. The answers must equal the plain modes' answers.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pytest

from powercontext.inference.base import Vectors
from powercontext.inference.errors import InferenceUnavailable
from powercontext.search.channels import ChannelSearch
from powercontext.search.embedding import GuardedEmbedder, VectorChannel

PAUSE_S = 0.2
DIM = 4


@dataclass(frozen=True)
class Record:
    key: str


@dataclass(frozen=True)
class Hit:
    record: Record
    score: float


class InProcessModel:
    """An in-process provider (no call deadline) that takes ``PAUSE_S`` per call, or fails."""

    name = "local"
    model_id = "test:slow"
    dimension = DIM
    configured = True

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        time.sleep(PAUSE_S)
        if self.fail:
            raise InferenceUnavailable("the test model is broken")
        return np.tile(np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32), (len(texts), 1))

    def call_budget_s(self, count: int) -> float | None:
        return None

    def close(self) -> None:
        pass


def text_reader(scope_id: str, terms: Sequence[str], limit: int) -> list[Hit]:
    time.sleep(PAUSE_S)
    return [Hit(Record(f"t{i}"), float(100 - i)) for i in range(limit)]


def vector_reader(scope_id: str, model_id: str, vector: np.ndarray, limit: int) -> list[Hit]:
    return [Hit(Record(f"t{i * 3}"), 1.0 - i / 100) for i in range(limit)]


def keys(hits: list[Hit]) -> list[str]:
    return [hit.record.key for hit in hits]


@pytest.mark.timed
def test_auto_embeds_while_the_full_text_search_runs_and_answers_like_hybrid() -> None:
    model = InProcessModel()
    search = ChannelSearch(text_reader, vector_reader, GuardedEmbedder(model))
    started = time.perf_counter()
    auto = search.search("s", "ledger close", "auto", 8)
    elapsed = time.perf_counter() - started
    hybrid = search.search("s", "ledger close", "hybrid", 8)
    assert (auto.mode, auto.fallback_reason) == ("hybrid", "none")
    assert keys(auto.hits) == keys(hybrid.hits)
    assert [hit.score for hit in auto.hits] == [hit.score for hit in hybrid.hits]
    # Side by side, not one after the other (2 x PAUSE_S).
    assert elapsed < 1.6 * PAUSE_S, elapsed


def test_a_failing_in_process_model_falls_back_to_exactly_the_fts_answer() -> None:
    model = InProcessModel(fail=True)
    embedder = GuardedEmbedder(model, cooldown_s=0)
    search, channel = ChannelSearch(text_reader, vector_reader, embedder), VectorChannel(embedder)
    auto = search.search("s", "ledger close", "auto", 5, channel=channel)
    fts = search.search("s", "ledger close", "fts", 5)
    assert (auto.mode, auto.fallback_reason) == ("fts", "inference_unavailable")
    assert keys(auto.hits) == keys(fts.hits) == ["t0", "t1", "t2", "t3", "t4"]
    # The same prepare's next search does not try the model again.
    again = search.search("s", "other words", "auto", 5, channel=channel)
    assert (again.mode, again.fallback_reason) == ("fts", "inference_unavailable")
    assert model.calls == 1


@pytest.mark.parametrize("fail", [False, True])
def test_a_known_vector_is_reused_without_another_call(fail: bool) -> None:
    model = InProcessModel(fail=fail)
    embedder = GuardedEmbedder(model, cooldown_s=0)
    search, channel = ChannelSearch(text_reader, vector_reader, embedder), VectorChannel(embedder)
    first = search.search("s", "ledger", "auto", 3, channel=channel)
    second = search.search("s", "ledger", "auto", 3, channel=channel)  # e.g. the Scope's next family
    assert (first.mode, first.fallback_reason) == (second.mode, second.fallback_reason)
    assert model.calls == 1
