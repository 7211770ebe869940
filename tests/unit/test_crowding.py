"""A vector hit's crowding: its mean cosine to its nearest other hits (search/crowding.py)."""

from __future__ import annotations

import numpy as np

from powercontext.search.crowding import crowding, decrowded


def _unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_hits_near_each_other_are_crowded_and_a_distinct_one_is_not() -> None:
    near = [_unit(1, 0.05 * i, 0) for i in range(4)]
    apart = _unit(0, 0, 1)
    crowded = crowding([*near, apart], neighbours=3)
    assert min(crowded[:4]) > 0.99
    assert abs(crowded[4]) < 0.01
    scores = decrowded([0.7, 0.7, 0.7, 0.7, 0.6], crowded, weight=0.5)
    assert scores[4] == max(scores)  # the distinct hit now leads the cluster that outscored it by cosine


def test_a_missing_vector_is_not_crowded_and_a_short_list_has_no_neighbourhood() -> None:
    a, b = _unit(1, 0), _unit(1, 0.1)
    assert crowding([a, None, b, _unit(1, 0.2)], neighbours=10)[1] == 0.0
    assert crowding([a, b]) == [0.0, 0.0]
    assert crowding([]) == []
