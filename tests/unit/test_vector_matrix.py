"""The in-memory vector matrix against a brute-force reference, through inserts, removals and compaction."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from powercontext.store.core.vectors import VectorMatrix, from_blob, load_matrix, to_blob

DIM = 8


def unit(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    ops=st.lists(st.tuples(st.sampled_from(["put", "put", "del"]), st.integers(1, 40)), max_size=200),
    limit=st.integers(1, 50),
)
def test_top_equals_brute_force(seed: int, ops: list[tuple[str, int]], limit: int) -> None:
    rng = np.random.default_rng(seed)
    matrix = VectorMatrix(DIM, generation=0)
    reference: dict[int, np.ndarray] = {}
    for op, rowid in ops:
        if op == "put":
            vector = unit(rng)
            matrix.upsert(rowid, vector)
            reference[rowid] = vector
        else:
            matrix.remove(rowid)
            reference.pop(rowid, None)
    query = unit(rng)
    expected = sorted(reference, key=lambda r: -float(reference[r] @ query))[:limit]
    got = matrix.top(query, limit)
    assert len(matrix) == len(reference)
    assert [r for r, _ in got] == expected
    for rowid, score in got:
        assert abs(score - float(reference[rowid] @ query)) < 1e-5


def test_compaction_after_many_removals_keeps_the_live_rows() -> None:
    rng = np.random.default_rng(1)
    matrix = VectorMatrix(DIM, generation=0)
    vectors = {i: unit(rng) for i in range(1, 5001)}
    for rowid, vector in vectors.items():
        matrix.upsert(rowid, vector)
    for rowid in range(1, 4001):
        matrix.remove(rowid)
    query = vectors[4500]
    assert matrix.top(query, 1) == [(4500, matrix.top(query, 1)[0][1])]
    assert len(matrix) == 1000
    assert {r for r, _ in matrix.top(query, 2000)} == set(range(4001, 5001))


def test_blob_round_trip_and_load_skip_other_lengths() -> None:
    rng = np.random.default_rng(2)
    vector = unit(rng)
    assert np.array_equal(from_blob(to_blob(vector)), vector)
    matrix = load_matrix([(1, to_blob(vector)), (2, to_blob(np.ones(DIM + 1, dtype=np.float32)))], DIM, 3)
    assert len(matrix) == 1 and matrix.generation == 3
    assert matrix.top(vector, 5)[0][0] == 1


def test_a_vector_of_another_dimension_is_never_stored_or_compared() -> None:
    matrix = VectorMatrix(DIM, generation=0)
    matrix.upsert(1, np.ones(DIM + 2, dtype=np.float32))
    assert len(matrix) == 0
    assert matrix.top(np.ones(DIM + 2, dtype=np.float32), 3) == []


def test_equal_scores_come_in_rowid_order_whatever_the_insertion_order() -> None:
    rng = np.random.default_rng(3)
    same = unit(rng)
    closer = unit(rng)
    rowids = [int(r) for r in rng.permutation(np.arange(1, 41))]
    matrix = VectorMatrix(DIM, generation=0)
    for rowid in rowids:
        matrix.upsert(rowid, same)
    matrix.upsert(99, closer)
    # A cut through the tied rows keeps the lowest rowids, after the one closer row.
    assert [r for r, _ in matrix.top(closer, 6)] == [99, 1, 2, 3, 4, 5]
    loaded = load_matrix([(r, to_blob(same)) for r in rowids], DIM, 0)
    assert [r for r, _ in loaded.top(same, 5)] == [1, 2, 3, 4, 5]
