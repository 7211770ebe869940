"""Finding sorted doc ids in a term's postings by marking them (core/id_marks.py) agrees with a plain search."""

from __future__ import annotations

import random

import numpy as np

from powercontext.store.core.id_marks import matches


def _expected(wanted: np.ndarray, ids: np.ndarray) -> list[tuple[int, int]]:
    where = {int(doc): i for i, doc in enumerate(ids)}
    return [(i, where[int(doc)]) for i, doc in enumerate(wanted) if int(doc) in where]


def test_positions_of_every_shared_id_in_both_lists() -> None:
    rng = random.Random(7)
    for _ in range(200):
        ids = np.array(sorted(rng.sample(range(50_000), rng.randint(1, 3_000))), dtype=np.int64)
        wanted = np.array(sorted(rng.sample(range(60_000), rng.randint(100, 2_000))), dtype=np.int64)
        found = matches(wanted, ids)
        assert found is not None
        assert list(zip(found[0].tolist(), found[1].tolist(), strict=True)) == _expected(wanted, ids)


def test_a_reused_table_keeps_no_mark_of_an_earlier_call() -> None:
    ids = np.arange(0, 300, 3, dtype=np.int64)
    first = matches(np.arange(0, 300, 2, dtype=np.int64), ids)
    assert first is not None and len(first[0]) > 0
    second = matches(np.array([1, 2, 4, 5, 7, 8], dtype=np.int64), ids)  # no multiple of 3
    assert second is not None and len(second[0]) == 0


def test_offsets_from_a_segment_work_as_ids() -> None:
    offsets = np.array([0, 5, 9, 40], dtype="<u4")  # as a segment stores them, relative to its lowest id
    found = matches(np.array([5, 6, 40], dtype=np.int64), offsets)
    assert found is not None
    assert found[0].tolist() == [0, 2] and found[1].tolist() == [1, 3]


def test_ids_looked_up_outside_the_postings_range_match_nothing() -> None:
    ids = np.array([0, 3, 4, 6], dtype=np.int64)
    found = matches(np.array([-6, -1, 4, 7, 1_000], dtype=np.int64), ids)
    assert found is not None
    assert found[0].tolist() == [2] and found[1].tolist() == [2]


def test_the_binary_search_is_left_to_the_caller_where_it_is_cheaper() -> None:
    many = np.arange(100_000, dtype=np.int64)
    assert matches(np.array([10, 20], dtype=np.int64), many) is None  # 50,000 postings per id looked up
    huge = np.array([1, 1 << 40], dtype=np.int64)
    assert matches(np.array([1], dtype=np.int64), huge) is None  # ids past any table
    assert matches(np.array([], dtype=np.int64), many) is None
