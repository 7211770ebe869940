"""The vector channel of one prepare and the breaker across prepares, against the real HTTP provider."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from powercontext.inference.config import EmbeddingConfig, build_embedding_provider
from powercontext.search.embedding import GuardedEmbedder, VectorChannel
from tests.embedding_fixture import EmbeddingServer, start_embedding_server
from tests.support import wait_until

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


@pytest.mark.timed
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


class SteppedClock:
    """The guard's clock, moved by the test: "later" without sleeping through a real stall."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.timed
def test_a_call_outstanding_past_its_deadline_sends_new_callers_to_fts_at_once(fake: EmbeddingServer) -> None:
    config = EmbeddingConfig(
        provider="openai-compatible", base_url=fake.base_url, model="m", dimension=DIM, timeout_s=2.0
    )
    clock = SteppedClock()
    guarded = GuardedEmbedder(build_embedding_provider(config), cooldown_s=0, clock=clock)
    fake.control(mode="trickle", trickle_s=0.5)
    before = requests(fake)
    stalled = threading.Thread(target=lambda: VectorChannel(guarded).query_vector(0, "first"))
    stalled.start()
    assert wait_until(lambda: requests(fake) == before + 1)
    # Still within its budget: the provider is not known to be stalling yet.
    assert guarded.open_reason() is None
    clock.now = 2.01  # past the outstanding call's deadline, while it has not returned
    started = time.perf_counter()
    assert VectorChannel(guarded).query_vector(0, "second") == "inference_timeout"
    assert guarded.embed_for_write(["a write"]) == [None]
    assert time.perf_counter() - started < 0.1
    assert requests(fake) == before + 1  # nobody else joined the wait
    stalled.join(timeout=10)
    fake.control(mode="answer")
    # The stalled call's own failure opened the breaker for cooldown_s=0: the provider is tried again.
    assert not isinstance(VectorChannel(guarded).query_vector(0, "third"), str)


@pytest.mark.timed
def test_calls_already_waiting_give_up_when_another_call_times_out(fake: EmbeddingServer) -> None:
    config = EmbeddingConfig(
        provider="openai-compatible", base_url=fake.base_url, model="m", dimension=DIM, timeout_s=1.0
    )
    guarded = GuardedEmbedder(build_embedding_provider(config), cooldown_s=0)
    fake.control(mode="trickle", trickle_s=0.2)
    ended: dict[str, float] = {}
    started = time.perf_counter()

    def search(name: str) -> None:
        assert VectorChannel(guarded).query_vector(0, name) == "inference_timeout"
        ended[name] = time.perf_counter() - started

    first = threading.Thread(target=search, args=("first",))
    first.start()
    time.sleep(0.5)
    second = threading.Thread(target=search, args=("second",))
    second.start()
    first.join(timeout=10)
    second.join(timeout=10)
    assert 0.95 <= ended["first"] < 1.3, ended
    # The second call's own deadline was at 1.5 s; it stopped when the first one timed out.
    assert ended["second"] < 1.3, ended
    fake.control(mode="answer")
