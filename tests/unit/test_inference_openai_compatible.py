"""The openai-compatible provider against the fake embedding server, a real process over loopback HTTP."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from powercontext.inference import (
    EmbeddingConfig,
    InferenceTimeout,
    InferenceUnavailable,
    OpenAICompatibleEmbeddings,
    build_embedding_provider,
)
from tests.embedding_fixture import EmbeddingServer, start_embedding_server
from tests.embedding_server import hashed_vector
from tests.support import free_port

DIM = 64
API_KEY = "sk-test-do-not-leak-4242"
SECRET_TEXT = "the launch code is swordfish"


@pytest.fixture(scope="module")
def fake() -> Iterator[EmbeddingServer]:
    with start_embedding_server(DIM) as server:
        yield server


@pytest.fixture
def server(fake: EmbeddingServer) -> EmbeddingServer:
    fake.reset()
    return fake


def provider_for(server: EmbeddingServer, **overrides: object) -> OpenAICompatibleEmbeddings:
    config = EmbeddingConfig(
        **{  # type: ignore[arg-type]
            "provider": "openai-compatible",
            "base_url": server.base_url,
            "model": "fake-embed",
            "dimension": server.dim,
            **overrides,
        }
    )
    provider = build_embedding_provider(config)
    assert isinstance(provider, OpenAICompatibleEmbeddings)
    return provider


def assert_content_free(error: Exception, server: EmbeddingServer) -> None:
    message = str(error)
    for secret in (SECRET_TEXT, "swordfish", API_KEY, server.origin, "127.0.0.1", "<html>"):
        assert secret not in message
    # Nothing chained either: an httpx exception or a JSON error could carry the URL or the body into a log.
    assert error.__cause__ is None
    assert error.__context__ is None or error.__suppress_context__


def test_answers_unit_vectors_matching_the_server(server: EmbeddingServer) -> None:
    texts = ["deploy pipeline blue green", "billing worker retries", ""]
    provider = provider_for(server)
    vectors = provider.embed(texts)
    assert vectors.shape == (3, DIM)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    expected = np.array([hashed_vector(t, DIM) for t in texts], dtype=np.float32)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    stats = server.stats()
    assert (stats["requests"], stats["inputs"], stats["model"]) == (1, 3, "fake-embed")
    provider.close()


def test_shared_words_are_nearest(server: EmbeddingServer) -> None:
    provider = provider_for(server)
    query, *docs = provider.embed(
        ["deploy to production", "we deploy to production on fridays", "lunch menu options", "quarterly tax forms"]
    )
    assert int(np.argmax(np.array(docs) @ query)) == 0
    provider.close()


def test_empty_input_makes_no_request(server: EmbeddingServer) -> None:
    provider = provider_for(server)
    assert provider.embed([]).shape == (0, DIM)
    assert server.stats()["requests"] == 0
    provider.close()


def test_batches_preserve_order(server: EmbeddingServer) -> None:
    texts = [f"memory number {i} about topic{i % 7}" for i in range(150)]
    provider = provider_for(server, batch_size=64)
    vectors = provider.embed(texts)
    stats = server.stats()
    assert (stats["requests"], stats["inputs"], stats["batch_sizes"]) == (3, 150, [64, 64, 22])
    expected = np.array([hashed_vector(t, DIM) for t in texts], dtype=np.float32)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    provider.close()


def test_items_are_reordered_by_index(server: EmbeddingServer) -> None:
    server.control(shuffle=True)
    texts = ["alpha", "beta gamma", "delta epsilon zeta"]
    provider = provider_for(server)
    expected = np.array([hashed_vector(t, DIM) for t in texts], dtype=np.float32)
    np.testing.assert_allclose(provider.embed(texts), expected, atol=1e-6)
    provider.close()


def test_api_key_is_sent_as_bearer(server: EmbeddingServer) -> None:
    provider = provider_for(server, api_key=API_KEY)
    provider.embed(["hello"])
    assert server.stats()["authorization"] == f"Bearer {API_KEY}"
    provider.close()


def test_no_authorization_without_a_key(server: EmbeddingServer) -> None:
    provider = provider_for(server)
    provider.embed(["hello"])
    assert server.stats()["authorization"] is None
    provider.close()


@pytest.mark.parametrize(
    ("mode", "fragment"),
    [
        ("error", "HTTP 500"),
        ("garbage", "not JSON"),
        ("bad_shape", "'data'"),
        ("wrong_dim", f"not {DIM} long"),
        ("wrong_count", "1 embeddings for 2 inputs"),
        ("nan", "non-finite"),
        ("non_numeric", "non-numeric"),
        ("bad_index", "'index'"),
    ],
)
def test_bad_answers_are_unavailable_and_content_free(server: EmbeddingServer, mode: str, fragment: str) -> None:
    server.control(mode)
    provider = provider_for(server, api_key=API_KEY)
    with pytest.raises(InferenceUnavailable) as caught:
        provider.embed([SECRET_TEXT, "second text"])
    assert caught.value.reason == "inference_unavailable"
    assert fragment in str(caught.value)
    assert_content_free(caught.value, server)
    provider.close()


def test_script_entries_are_consumed_one_per_request(server: EmbeddingServer) -> None:
    server.control("answer", script=["error", "answer"])
    provider = provider_for(server)
    with pytest.raises(InferenceUnavailable):
        provider.embed(["one", "two"])
    assert provider.embed(["one", "two"]).shape == (2, DIM)
    assert provider.embed(["one", "two"]).shape == (2, DIM)
    assert server.stats()["requests"] == 3
    provider.close()


@pytest.mark.timed
def test_refused_connection_is_unavailable() -> None:
    port = free_port()  # bound and released: nothing listens there
    provider = OpenAICompatibleEmbeddings(f"http://127.0.0.1:{port}/v1", "m", DIM, api_key=API_KEY, timeout_s=2.0)
    started = time.perf_counter()
    with pytest.raises(InferenceUnavailable) as caught:
        provider.embed([SECRET_TEXT])
    assert time.perf_counter() - started < 2.0
    assert "could not be reached" in str(caught.value)
    for secret in (SECRET_TEXT, API_KEY, str(port)):
        assert secret not in str(caught.value)
    provider.close()


@pytest.mark.timed
def test_stall_past_the_timeout_is_a_timeout(server: EmbeddingServer) -> None:
    server.control("stall", stall_s=3.0)
    provider = provider_for(server, timeout_s=0.3, api_key=API_KEY)
    started = time.perf_counter()
    with pytest.raises(InferenceTimeout) as caught:
        provider.embed([SECRET_TEXT])
    elapsed = time.perf_counter() - started
    assert 0.25 <= elapsed < 1.3, elapsed
    assert caught.value.reason == "inference_timeout"
    assert_content_free(caught.value, server)
    provider.close()


def test_client_recovers_after_a_timeout(server: EmbeddingServer) -> None:
    server.control(script=["stall", "answer"], stall_s=2.0)
    provider = provider_for(server, timeout_s=0.3)
    with pytest.raises(InferenceTimeout):
        provider.embed(["first"])
    np.testing.assert_allclose(provider.embed(["second"])[0], hashed_vector("second", DIM), atol=1e-6)
    provider.close()


def test_short_stall_within_the_timeout_answers(server: EmbeddingServer) -> None:
    server.control("stall", stall_s=0.1)
    provider = provider_for(server, timeout_s=2.0)
    assert provider.embed(["patience"]).shape == (1, DIM)
    provider.close()


def test_one_client_serves_many_threads(server: EmbeddingServer) -> None:
    provider = provider_for(server, batch_size=5)
    texts = [f"thread safe text {i}" for i in range(12)]
    expected = np.array([hashed_vector(t, DIM) for t in texts], dtype=np.float32)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def work() -> None:
        try:
            for _ in range(5):
                vectors = provider.embed(texts)
                with lock:
                    results.append(vectors)
        except BaseException as exc:  # surfaced in the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    assert len(results) == 40
    for vectors in results:
        np.testing.assert_allclose(vectors, expected, atol=1e-6)
    assert server.stats()["requests"] == 8 * 5 * 3
    provider.close()


def test_a_bare_string_is_rejected(server: EmbeddingServer) -> None:
    provider = provider_for(server)
    with pytest.raises(TypeError):
        provider.embed("not a list")
    provider.close()


@pytest.mark.timed
def test_a_trickling_answer_is_cut_off_at_the_total_deadline(server: EmbeddingServer) -> None:
    # One byte every 0.2 s never trips a per-read timeout of 0.5 s; only a deadline on the whole call does.
    server.control("trickle", trickle_s=0.2)
    provider = provider_for(server, timeout_s=0.5, api_key=API_KEY)
    started = time.perf_counter()
    with pytest.raises(InferenceTimeout) as caught:
        provider.embed([SECRET_TEXT])
    elapsed = time.perf_counter() - started
    assert 0.45 <= elapsed < 0.8, elapsed
    assert_content_free(caught.value, server)
    # The trickling connection is dropped, not handed to the next call.
    server.control("answer")
    np.testing.assert_allclose(provider.embed(["after"])[0], hashed_vector("after", DIM), atol=1e-6)
    provider.close()


@pytest.mark.timed
def test_each_batch_request_has_its_own_deadline(server: EmbeddingServer) -> None:
    # Three batches that each take 0.3 s fit a 0.5 s per-request deadline although the call takes ~0.9 s.
    server.control("stall", stall_s=0.3)
    provider = provider_for(server, timeout_s=0.5, batch_size=2)
    assert provider.embed(["a", "b", "c", "d", "e", "f"]).shape == (6, DIM)
    assert provider.call_budget_s(6) == pytest.approx(1.5)
    assert provider.call_budget_s(1) == pytest.approx(0.5)
    provider.close()


def test_an_http_proxy_from_the_environment_is_used(server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> None:
    # The fake server answers absolute-form requests too, so it can stand in for a forward proxy: the
    # provider's own host does not exist, so an answer can only have come through the proxy.
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", server.origin)
    provider = OpenAICompatibleEmbeddings("http://embeddings.invalid/v1", "fake-embed", DIM, timeout_s=2.0)
    np.testing.assert_allclose(provider.embed(["proxied"])[0], hashed_vector("proxied", DIM), atol=1e-6)
    provider.close()
