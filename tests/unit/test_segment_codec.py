"""A postings segment reads back exactly as written, in either encoding, and old (record) segments still read."""

from __future__ import annotations

import random

import numpy as np
import pytest

from powercontext.store.core import segment_codec
from powercontext.store.core.bm25 import FIELDS, POSTING
from powercontext.store.core.packed import joined, unpack


def _segment(rng: random.Random, n: int, *, first: int = 1, two: bool = False, big: bool = False) -> np.ndarray:
    docs = sorted(rng.sample(range(first, first + 4 * n), n))
    rows = [
        (
            d,
            rng.randint(1, 70_000 if big else 4),
            rng.randint(0, 3) if two else 0,
            rng.randint(2, 70_000 if big else 90),
        )
        for d in docs
    ]
    return np.array(rows, dtype=POSTING)


@pytest.mark.parametrize("two", [False, True])
def test_a_memory_segment_is_written_in_columns_and_reads_back_exactly(two: bool) -> None:
    array = _segment(random.Random(1), 4096, first=2**40, two=two)
    blob = segment_codec.encode(array)
    assert len(blob) == 24 + len(array) * (10 if two else 8)  # not 20 bytes a posting
    part = segment_codec.view(blob)
    assert len(part) == len(array)
    assert part.maxima == (array["tf1"].max(), array["tf2"].max(), array["len"].min())  # a term's bound
    assert unpack(blob).tobytes() == array.tobytes()


def test_a_segment_of_a_few_postings_stays_in_records() -> None:
    array = _segment(random.Random(4), 31)
    assert segment_codec.encode(array) == array.tobytes()


def test_values_past_the_columns_fall_back_to_records() -> None:
    rng = random.Random(2)
    wide = _segment(rng, 50)
    wide["doc"][-1] = wide["doc"][0] + 2**33  # an id span past uint32
    heavy = _segment(rng, 50, big=True)  # frequencies and lengths past uint16
    for array in (wide, heavy):
        blob = segment_codec.encode(array)
        assert blob == array.tobytes()
        assert unpack(blob).tobytes() == array.tobytes()


def test_a_term_with_segments_in_both_encodings_reads_in_doc_order() -> None:
    rng = random.Random(3)
    old = _segment(rng, 300, first=1)  # written before columns: records
    new = _segment(rng, 200, first=5_000)
    tail = _segment(rng, 3, first=9_000)
    parts = [(int(new["doc"][0]), segment_codec.encode(new)), (int(tail["doc"][0]), tail.tobytes())]
    parts.append((int(old["doc"][0]), old.tobytes()))
    expected = np.concatenate([old, new, tail])
    found = joined(parts)
    assert len(found) == len(expected)
    for name in FIELDS:
        assert found[name].tolist() == expected[name].tolist(), name
