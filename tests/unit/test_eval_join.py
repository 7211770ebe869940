"""The join's per-item reconstruction from a pool order, the selection and the Receipt's counts."""

from __future__ import annotations

from powercontext.evaluation.join import join_misses, pool_reasons
from powercontext.evaluation.metrics import ndcg_at, outdated_instead, outdated_over_current, percentile


def test_items_below_the_filled_cap_are_cut_by_it_and_earlier_ones_by_bytes() -> None:
    pool = ["a", "b", "c", "d", "e"]
    # Cap 2: "a" selected, "b" did not fit, "c" filled the cap, "d" and "e" were cut by it.
    reasons, exact = pool_reasons(pool, ["a", "c"], {"no_fitting_truncation": 1, "entry_limit": 2}, cap=2)
    assert reasons == {"b": "byte_budget", "d": "entry_limit", "e": "entry_limit"}
    assert exact


def test_counts_that_disagree_with_the_pool_are_not_exact() -> None:
    _, exact = pool_reasons(["a", "b", "c"], ["a"], {"entry_limit": 5}, cap=1)
    assert not exact
    # An item selected that the re-read pool does not hold (e.g. found by an expansion round).
    _, exact = pool_reasons(["a", "b"], ["a", "z"], {"entry_limit": 1}, cap=2)
    assert not exact


def test_rerank_omissions_attribute_every_unselected_pool_item_to_the_reranker() -> None:
    result = join_misses(["c", "x"], ["a"], ["a", "b", "c"], ["a", "b", "c", "y", "x"], {"rerank_not_selected": 2}, 8)
    assert [(m.memory_id, m.reason, m.pool_rank, m.deep_rank) for m in result.misses] == [
        ("c", "rerank_not_selected", 3, 3),
        ("x", "outside_pool", None, 5),
    ]


def test_ndcg_and_outdated_rules() -> None:
    assert ndcg_at(["x", "a"], ["a"], 8) == 1 / 1.584962500721156
    assert ndcg_at(["a", "b"], ["a", "b"], 8) == 1.0
    assert outdated_instead(["old"], ["new"], ["old"]) and not outdated_instead(["old", "new"], ["new"], ["old"])
    assert outdated_over_current(["old", "new"], ["new"], ["old"])
    assert not outdated_over_current(["new", "old"], ["new"], ["old"])
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 50) == 3.0
