"""The vector channel of one prepare and the breaker across prepares, against the real HTTP provider."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from powercontext.inference.config import EmbeddingConfig, build_embedding_provider
from powercontext.search.embedding import GuardedEmbedder, VectorChannel
from tests.embedding_fixture import EmbeddingServer, start_embedding_server

DIM = 16


@pytest.fixture(scope="module")
def fake() -> Iterator[EmbeddingServer]:
    with start_embedding_server(DIM) as server:
        yield server


def embedder(fake: EmbeddingServer, cooldown_s: float) -> GuardedEmbedder:
    config = EmbeddingConfig(
        provider="openai-compatible", base_url=fake.base_url, model="m", dimension=DIM, timeout_s=0.3
    )
    return GuardedEmbedder(build_embedding_provider(config), cooldown_s=cooldown_s)


def requests(fake: EmbeddingServer) -> int:
    return int(fake.stats()["requests"])


def test_a_later_round_reuses_the_failure_without_calling_again(fake: EmbeddingServer) -> None:
    fake.control(mode="answer", script=["stall"], stall_s=1.0)
    channel = VectorChannel(embedder(fake, cooldown_s=0))
    before = requests(fake)
    assert channel.query_vector(0, "q") == "inference_timeout"
    # Another search of the same round reports the observed class and does not wait again.
    assert channel.query_vector(0, "q") == "inference_timeout"
    assert channel.query_vector(1, "expanded q") == "reused_fts_fallback"
    assert channel.query_vector(2, "expanded again") == "reused_fts_fallback"
    assert requests(fake) - before == 1


def test_each_scope_asks_the_provider_once_and_its_families_share_the_vector(fake: EmbeddingServer) -> None:
    fake.control(mode="answer")
    channel = VectorChannel(embedder(fake, cooldown_s=0))
    before = requests(fake)
    first = channel.query_vector(0, "ledger", "scope-a")
    again = channel.query_vector(0, "ledger", "scope-a")  # e.g. Topic Memory after Atomic Memory
    other = channel.query_vector(0, "ledger", "scope-b")
    assert not isinstance(first, str) and first.shape == (DIM,)
    assert again is first and not isinstance(other, str)
    # One call per Scope: a referenced Scope's search can still fail on its own (the RFC's example).
    assert requests(fake) - before == 2


def test_the_breaker_skips_the_provider_during_the_cooldown(fake: EmbeddingServer) -> None:
    guarded = embedder(fake, cooldown_s=0.6)
    fake.control(mode="error")
    assert VectorChannel(guarded).query_vector(0, "q") == "inference_unavailable"
    fake.control(mode="answer")
    before = requests(fake)
    # A new prepare during the cool-down: fts with the class of the failure, and no call.
    assert VectorChannel(guarded).query_vector(0, "q") == "inference_unavailable"
    assert requests(fake) == before
    time.sleep(0.7)
    assert not isinstance(VectorChannel(guarded).query_vector(0, "q"), str)
    assert requests(fake) == before + 1


def test_without_a_provider_the_channel_is_plain_fts() -> None:
    channel = VectorChannel(GuardedEmbedder(build_embedding_provider(EmbeddingConfig())))
    assert channel.query_vector(0, "q") == "none"
    assert channel.query_vector(1, "q") == "none"
