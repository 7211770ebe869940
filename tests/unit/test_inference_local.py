"""The local all-MiniLM-L6-v2 provider: shipped int8 weights, NumPy or ONNX Runtime forward pass, no network."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from powercontext.inference import InferenceError
from powercontext.inference.local import Backend, LocalMiniLM, load_tokenizer
from powercontext.inference.onnx_minilm import available as onnx_available
from powercontext.inference.openvino_minilm import available as openvino_available

QUERY = "how do we ship to production"
RELEVANT = "Releases go out through the blue/green deploy pipeline"
UNRELATED = [
    "The office coffee machine is descaled every Monday",
    "Alice prefers dark mode in her editor",
    "The quarterly tax forms are filed by the accountant",
    "Penguins live mostly in the southern hemisphere",
]


@pytest.fixture(scope="module")
def model() -> Iterator[LocalMiniLM]:
    provider = LocalMiniLM()
    provider.load()
    yield provider
    provider.close()


def test_identity() -> None:
    provider = LocalMiniLM()
    assert (provider.name, provider.dimension, provider.configured) == ("local", 384, True)
    assert provider.model_id == "local:all-MiniLM-L6-v2:int8-v1"


def test_deploy_query_is_nearest_to_the_deploy_memory(model: LocalMiniLM) -> None:
    query, *docs = model.embed([QUERY, RELEVANT, *UNRELATED])
    scores = np.array(docs) @ query
    assert int(np.argmax(scores)) == 0
    assert scores[0] > max(scores[1:]) + 0.1, scores


def test_shape_dtype_and_unit_rows(model: LocalMiniLM) -> None:
    vectors = model.embed([QUERY, RELEVANT, "x"])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    assert vectors.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_empty_list_loads_nothing() -> None:
    provider = LocalMiniLM()
    assert provider.embed([]).shape == (0, 384)
    assert provider._model is None  # no weights were loaded for nothing


def test_empty_string_is_embedded(model: LocalMiniLM) -> None:
    # "" is [CLS] [SEP]: a real, fixed unit vector, so an empty memory never fails a whole batch.
    vectors = model.embed(["", QUERY, ""])
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(vectors[0], vectors[2])
    assert float(vectors[0] @ vectors[1]) < 0.9


def test_deterministic(model: LocalMiniLM) -> None:
    texts = [QUERY, RELEVANT, *UNRELATED]
    np.testing.assert_array_equal(model.embed(texts), model.embed(texts))


def test_batch_composition_does_not_change_a_vector(model: LocalMiniLM) -> None:
    # Padding is masked out: alone or batched with longer texts (and in another order), a text keeps its vector.
    alone = model.embed([QUERY])[0]
    batched = model.embed([*UNRELATED, RELEVANT * 5, QUERY])[-1]
    np.testing.assert_allclose(alone, batched, atol=2e-6)


def test_small_batch_size_gives_the_same_vectors(model: LocalMiniLM) -> None:
    texts = [QUERY, RELEVANT, *UNRELATED]
    np.testing.assert_allclose(LocalMiniLM(batch_size=2).embed(texts), model.embed(texts), atol=2e-6)


def test_long_texts_are_truncated_to_256_tokens(model: LocalMiniLM) -> None:
    long_text = " ".join(f"word{i}" for i in range(400))
    assert len(load_tokenizer().encode(long_text).ids) == 256
    a, b = model.embed([long_text, long_text + " and a tail that falls past the limit"])
    np.testing.assert_allclose(a, b, atol=2e-6)


def test_unicode_and_odd_inputs(model: LocalMiniLM) -> None:
    texts = ["データベースは毎晩バックアップされます。", "🚀🎉", "\u200b", "   ", "a\x00b", "ÉLAN élan"]
    vectors = model.embed(texts)
    assert np.all(np.isfinite(vectors))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_non_text_items_raise_an_inference_error(model: LocalMiniLM) -> None:
    with pytest.raises(InferenceError):
        model.embed([QUERY, 42])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        model.embed(QUERY)


def test_threads_get_identical_results(model: LocalMiniLM) -> None:
    texts = [QUERY, RELEVANT, *UNRELATED, ""]
    expected = model.embed(texts)
    fresh = LocalMiniLM()  # also races the lazy load itself
    results: list[np.ndarray] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def work(provider: LocalMiniLM) -> None:
        try:
            barrier.wait(timeout=30)
            for _ in range(3):
                results.append(provider.embed(texts))
        except BaseException as exc:  # surfaced in the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(fresh if i % 2 else model,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    assert len(results) == 24
    for vectors in results:
        np.testing.assert_array_equal(vectors, expected)
    fresh.close()


def test_close_then_embed_reloads() -> None:
    provider = LocalMiniLM()
    first = provider.embed([QUERY])
    provider.close()
    np.testing.assert_array_equal(provider.embed([QUERY]), first)
    provider.close()


# -- fidelity to the original model, for every route -----------------------------------------------------------

REFERENCE = Path(__file__).resolve().parent.parent / "data" / "minilm_reference.npz"
ROUTES = [
    "numpy",
    pytest.param("onnx", marks=pytest.mark.skipif(not onnx_available(), reason="no embeddings-onnx")),
    pytest.param("openvino", marks=pytest.mark.skipif(not openvino_available(), reason="no embeddings-fast")),
]


@pytest.fixture(scope="module")
def reference() -> tuple[list[str], np.ndarray]:
    # Written by tools/convert_minilm.py --reference-out from the float32 original weights, not by this package.
    with np.load(REFERENCE) as data:
        return [str(s) for s in data["sentences"]], data["vectors"].astype(np.float32)


RouteVectors = Callable[[Backend], tuple[str | None, np.ndarray]]


@pytest.fixture(scope="module")
def route_vectors(reference: tuple[list[str], np.ndarray]) -> RouteVectors:
    """The reference sentences embedded by one route (and the route that ran), once per route for the module.

    A route's vectors are a fixed function of the sentences (``test_deterministic``; and thread count changes no
    bit, ``test_threads_split_...``), so the fidelity and cross-route tests compare the same vectors whether each
    embeds them again or not; each embedding of the 201 sentences costs ~5 s of CPU.
    """
    sentences, _ = reference
    done: dict[str, tuple[str | None, np.ndarray]] = {}

    def vectors(backend: Backend) -> tuple[str | None, np.ndarray]:
        if backend not in done:
            provider = LocalMiniLM(backend=backend, threads=2)
            embedded = provider.embed(sentences)
            done[backend] = (provider.backend, embedded)
            provider.close()
        return done[backend]

    return vectors


@pytest.mark.parametrize("backend", ROUTES)
def test_every_route_stays_within_0999_cosine_of_the_original_model(
    backend: Backend, reference: tuple[list[str], np.ndarray], route_vectors: RouteVectors
) -> None:
    sentences, expected = reference
    assert len(sentences) == 201
    ran, vectors = route_vectors(backend)
    assert ran == backend
    cosines = np.sum(vectors * expected, axis=1) / np.linalg.norm(expected, axis=1)
    assert cosines.min() >= 0.999, (float(cosines.min()), sentences[int(np.argmin(cosines))])


@pytest.mark.skipif(not onnx_available(), reason="no embeddings-onnx")
def test_onnx_and_numpy_routes_give_the_same_vectors(route_vectors: RouteVectors) -> None:
    np.testing.assert_allclose(route_vectors("onnx")[1], route_vectors("numpy")[1], atol=2e-5)
    assert LocalMiniLM(backend="onnx").model_id == LocalMiniLM(backend="numpy").model_id  # one index serves both


@pytest.mark.skipif(not openvino_available(), reason="no embeddings-fast")
def test_openvino_vectors_rank_like_the_float32_route(route_vectors: RouteVectors) -> None:
    # bfloat16 matmuls (where the CPU has them) round differently, but a stored index must serve both routes:
    # every vector stays within 0.9995 cosine of the float32 route's, and nearest neighbours agree.
    fast, plain = route_vectors("openvino")[1], route_vectors("numpy")[1]
    assert np.sum(fast * plain, axis=1).min() >= 0.9995
    query_fast, query_plain = fast[:40], plain[:40]
    np.testing.assert_array_equal(
        np.argsort(-(query_fast @ plain[40:].T), axis=1)[:, :3],
        np.argsort(-(query_plain @ plain[40:].T), axis=1)[:, :3],
    )
    assert LocalMiniLM(backend="openvino").model_id == LocalMiniLM(backend="numpy").model_id


@pytest.mark.skipif(not openvino_available(), reason="no embeddings-fast")
def test_openvino_pads_inputs_to_few_shapes_without_changing_a_vector(model: LocalMiniLM) -> None:
    from powercontext.inference.local import load_encoder
    from powercontext.inference.openvino_minilm import PADDED_LENGTHS, OpenVinoMiniLM, pad_inputs

    # Every length from 1 to 256 and batch from 1 to 64 lands on one of a few shapes the plugin keeps kernels for.
    shapes = {
        pad_inputs(np.zeros((batch, length, 1), np.float32), np.ones((batch, length), np.bool_))[0].shape[:2]
        for batch in range(1, 65)
        for length in range(1, 257)
        if batch * length <= 1024
    }
    assert len(shapes) <= 16 * 10
    hidden, mask = pad_inputs(np.ones((3, 9, 2), np.float32), np.ones((3, 9), np.bool_))
    assert hidden.shape == (4, 16, 2) and mask[:3, :9].all() and not mask[:3, 9:].any()
    assert mask[3].tolist() == [True] + [False] * 15  # a filler row is never all padding
    # Padded or not, a text's pooled sum is the same: against an input that already has a padded shape.
    encoder = OpenVinoMiniLM(load_encoder(), threads=1)
    ids = np.array([load_tokenizer().encode(RELEVANT).ids], dtype=np.int64)
    width = ids.shape[1]
    assert width not in PADDED_LENGTHS
    exact_ids = np.zeros((2, 32), dtype=np.int64)
    exact_ids[:, :width] = ids
    exact_mask = np.zeros((2, 32), dtype=np.bool_)
    exact_mask[:, :width] = True
    padded = encoder.mean_pooled(ids, np.ones_like(ids, dtype=np.bool_))
    unpadded = encoder.mean_pooled(exact_ids, exact_mask)
    np.testing.assert_allclose(padded[0], unpadded[0], atol=2e-6)


def test_auto_takes_the_fastest_installed_route() -> None:
    provider = LocalMiniLM()
    assert provider.backend is None  # nothing loaded yet
    provider.load()
    expected = "openvino" if openvino_available() else "onnx" if onnx_available() else "numpy"
    assert provider.backend == expected
    provider.close()


@pytest.mark.parametrize("backend", ROUTES)
def test_threads_split_a_bulk_call_without_changing_a_vector(
    backend: Backend, reference: tuple[list[str], np.ndarray]
) -> None:
    # Every third sentence (67, their lengths spread as in the whole set): nine or more mini-batches of 8 or less,
    # one partial, over four threads; the 26 batches of all 201 sentences split no differently.
    sentences = reference[0][::3]
    one = LocalMiniLM(batch_size=8, threads=1, backend=backend).embed(sentences)
    four = LocalMiniLM(batch_size=8, threads=4, backend=backend).embed(sentences)
    np.testing.assert_array_equal(one, four)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        LocalMiniLM(threads=0)
    with pytest.raises(ValueError):
        LocalMiniLM(backend="gpu")  # type: ignore[arg-type]


FALLBACK = """
import sys
for name in sys.argv[1:]:
    sys.modules[name] = None  # import raises ImportError, as on an install without that extra
from powercontext.inference.config import EmbeddingConfig, EmbeddingConfigError, build_embedding_provider
provider = build_embedding_provider(EmbeddingConfig(provider="local"))
assert provider.embed(["hello"]).shape == (1, 384)
print(provider.backend)
for backend in ("openvino", "onnx"):
    try:
        build_embedding_provider(EmbeddingConfig(provider="local", backend=backend))
    except EmbeddingConfigError as exc:
        print(exc)
"""


@pytest.mark.parametrize(
    ("blocked", "auto_route"),
    [
        (["openvino", "onnxruntime"], "numpy"),
        pytest.param(["openvino"], "onnx", marks=pytest.mark.skipif(not onnx_available(), reason="no onnx")),
    ],
)
def test_without_a_runtime_auto_falls_back_and_the_named_backend_is_refused(
    blocked: list[str], auto_route: str
) -> None:
    out = subprocess.run(
        [sys.executable, "-c", FALLBACK, *blocked], capture_output=True, text=True, timeout=120, check=True
    )
    lines = out.stdout.splitlines()
    assert lines[0] == auto_route
    assert "POWERCONTEXT_EMBEDDINGS_BACKEND=openvino needs the 'embeddings-fast' extra" in lines[1]
    if "onnxruntime" in blocked:
        assert "POWERCONTEXT_EMBEDDINGS_BACKEND=onnx needs the 'embeddings-onnx' extra" in lines[2]
    else:
        assert len(lines) == 2  # onnx is installed: no complaint
