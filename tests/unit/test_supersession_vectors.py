"""The newer-first rule's vector test: a statement that is another's nearest neighbour in the hit list, and far
closer to it than the list's pairs are, covers the same subject (with two shared terms), whatever the embedding
model's cosine scale."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from powercontext.recall.supersession import nearest_neighbours, newer_first

DIM = 12


def vec(*weights: float) -> np.ndarray:
    v = np.array([*weights, *([0.0] * (DIM - len(weights)))], dtype=np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


@dataclass(frozen=True)
class Hit:
    text: str
    observed: str


# Two shared subject terms ("ingest", "queue"), each among many others: the terms alone weigh the overlap
# well under a quarter of either statement, so they do not call it the same subject.
OLD = Hit(
    "The ingest queue drains through the Kafka cluster in Frankfurt, partitioned by tenant, retained seven days",
    "2025-01-01",
)
NEW = Hit(
    "Ingest now moved: queue consumers replaced by Pulsar brokers in Dublin, sharded per region, compacted hourly",
    "2025-06-01",
)
OTHERS = [
    Hit("Billing invoices render through the PDF worker with Helvetica fonts", "2025-02-01"),
    Hit("On-call rotation swaps every Monday morning at nine", "2025-03-01"),
    Hit("Design reviews need two approvals from staff engineers", "2025-03-02"),
    Hit("Feature flags expire after ninety days", "2025-03-03"),
    Hit("Laptops get disk encryption through MDM profiles", "2025-03-04"),
    Hit("Quarterly planning starts six weeks ahead", "2025-03-05"),
]
N = len(OTHERS) + 2


def axis(k: int) -> np.ndarray:
    return vec(*([0.0] * k), 1.0)


def unrelated() -> list[np.ndarray | None]:
    """The other statements' vectors: one axis each, unrelated to each other and to OLD and NEW."""
    return [axis(4 + k) for k in range(len(OTHERS))]


def ranked() -> list[Hit]:
    return [OLD, *OTHERS, NEW]


def test_without_vectors_the_few_shared_terms_do_not_move_the_newer_statement() -> None:
    assert newer_first(ranked(), N, lambda h: h.observed, lambda h: h.text) == ranked()


def test_the_nearest_neighbour_by_vector_moves_the_newer_statement_above_the_older() -> None:
    vectors = [vec(1, 0.2), *unrelated(), vec(0.9, 0.3, 0, 0.1)]  # NEW is OLD's nearest, by far
    ordered = newer_first(ranked(), N, lambda h: h.observed, lambda h: h.text, lambda: vectors)
    assert ordered == [NEW, OLD, *OTHERS]


def test_a_vector_neighbour_that_is_not_the_nearest_does_not_count() -> None:
    # OLD's nearest is the billing note and NEW's the on-call note, though NEW and OLD are far closer to each
    # other than unrelated statements are.
    others = unrelated()
    others[0], others[1] = vec(1, 0.25), vec(0, 0, 1)
    vectors = [vec(1, 0.2), *others, vec(0.5, 0, 1)]
    ordered = newer_first(ranked(), N, lambda h: h.observed, lambda h: h.text, lambda: vectors)
    assert ordered == ranked()


def test_a_nearest_neighbour_that_is_no_closer_than_the_rest_does_not_count() -> None:
    # Every pair has the same cosine (one shared direction plus one of its own): a model whose vectors all sit
    # close together names a nearest neighbour for everything, and none of them means the same subject.
    vectors: list[np.ndarray | None] = [vec(*([1.0] + [0.0] * k + [0.5])) for k in range(N)]
    ordered = newer_first(ranked(), N, lambda h: h.observed, lambda h: h.text, lambda: vectors)
    assert ordered == ranked()


def test_hits_without_a_stored_vector_fall_back_to_the_terms() -> None:
    vectors = [None, *unrelated(), vec(1, 0.2)]
    ordered = newer_first(ranked(), N, lambda h: h.observed, lambda h: h.text, lambda: vectors)
    assert ordered == ranked()


def test_the_vectors_are_not_read_when_no_hit_says_something_changed() -> None:
    def unread() -> list[np.ndarray | None]:
        raise AssertionError("read vectors for a list without a possible successor")

    calm = [OLD, *OTHERS]
    assert newer_first(calm, N, lambda h: h.observed, lambda h: h.text, unread) == calm


def test_nearest_neighbours_skip_missing_vectors_and_a_list_too_short_to_stand_out() -> None:
    close = [vec(1), None, vec(0.95, 0.05), *unrelated()]
    found = nearest_neighbours(close)
    assert found[0] == frozenset({2}) and found[2] == frozenset({0})
    assert found[1] == frozenset()
    assert all(f == frozenset() for f in found[3:])  # nothing stands out near an unrelated statement
    assert nearest_neighbours([vec(1), vec(0.95, 0.05)]) == [frozenset(), frozenset()]
