"""A background job's embeddings let a prepare's query go first (``GuardedEmbedder.embed_in_background``).

Found by a QA pass: while the code-vector fill ran after ``code index`` (~12 minutes for this repository on two
busy cores), prepares took 0.3-2 s, since a query's embedding waited behind the fill's whole batch on the one
local model, and a host's hook timed out. The provider here is a model of that: it computes in this process (no
deadline), one call at a time, 20 ms per text.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from powercontext.search.embedding import BACKGROUND_SLICE, MAX_YIELD_S, GuardedEmbedder

PER_TEXT_S = 0.02


class SerialModel:
    """Computes in process, one call at a time, like the local model's one compiled stream."""

    name = "local"
    model_id = "test:serial"
    dimension = 4
    configured = True

    def __init__(self, remote: bool = False) -> None:
        self.remote = remote
        self.calls: list[tuple[int, float, float]] = []  # (texts, started, ended)
        self._one_at_a_time = threading.Lock()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        with self._one_at_a_time:
            started = time.monotonic()
            time.sleep(PER_TEXT_S * len(texts))
            self.calls.append((len(texts), started, time.monotonic()))
        rows = np.array([[float(len(t)), 1.0, 0.0, 0.0] for t in texts], dtype=np.float32)
        out: npt.NDArray[np.float32] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        return out

    def call_budget_s(self, count: int) -> float | None:
        return 30.0 if self.remote else None  # a remote provider has a deadline; local computation none

    def close(self) -> None:
        return None


@pytest.mark.timed
def test_a_query_waits_for_one_slice_of_a_background_batch_not_the_whole_batch() -> None:
    model = SerialModel()
    embedder = GuardedEmbedder(model)
    texts = [f"chunk {i}" for i in range(40)]  # 0.8 s in one call
    background: dict[str, npt.NDArray[np.float32]] = {}
    job = threading.Thread(target=lambda: background.update(v=embedder.embed_in_background(texts)))
    job.start()
    time.sleep(0.15)  # the job is mid-batch
    asked = time.monotonic()
    embedder.embed(["how do we deploy?"])
    waited = time.monotonic() - asked
    job.join(timeout=10)
    # One slice (BACKGROUND_SLICE texts, 20 ms each) at most, then the query's own 20 ms; the whole batch
    # would be ~0.65 s more.
    assert waited < 0.3, waited
    assert max(n for n, _, _ in model.calls) <= BACKGROUND_SLICE
    # The job's vectors are the batch's, in order, as one call would have made them.
    np.testing.assert_array_equal(background["v"], model.embed(texts))


def test_a_remote_provider_gets_the_whole_batch_in_one_call() -> None:
    model = SerialModel(remote=True)
    vectors = GuardedEmbedder(model).embed_in_background([f"t{i}" for i in range(10)])
    assert [n for n, _, _ in model.calls] == [10] and vectors.shape == (10, 4)


def test_a_steady_stream_of_queries_slows_a_job_but_cannot_stop_it() -> None:
    model = SerialModel()
    embedder = GuardedEmbedder(model)
    stop = threading.Event()

    def queries() -> None:
        while not stop.is_set():
            embedder.embed(["q"])

    streams = [threading.Thread(target=queries) for _ in range(2)]
    for stream in streams:
        stream.start()
    try:
        started = time.monotonic()
        vectors = embedder.embed_in_background([f"t{i}" for i in range(4)])
        assert vectors.shape == (4, 4)
        # Each slice waits at most MAX_YIELD_S for the stream to pause, then goes anyway.
        assert time.monotonic() - started < 4 * (BACKGROUND_SLICE * PER_TEXT_S + MAX_YIELD_S) + 2
    finally:
        stop.set()
        for stream in streams:
            stream.join(timeout=5)
