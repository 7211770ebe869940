"""The relevance floor's rules on plain hits: the cosine floor is the model's own, the full-text one absolute."""

from __future__ import annotations

from dataclasses import dataclass

from powercontext.domain.identity import ArtifactKey
from powercontext.search.relevance import FTS_SHARE_FLOOR, RelevanceFloor


@dataclass(frozen=True)
class _Record:
    key: ArtifactKey
    text: str


@dataclass(frozen=True)
class _Hit:
    record: _Record
    score: float


def _hit(n: int, text: str, score: float) -> _Hit:
    return _Hit(_Record(ArtifactKey("s", "atomic-memory", f"am_{n:026d}", 1), text), score)


def _no_statistics(scope_id: str, terms: object) -> tuple[int, dict[str, int]]:
    return 100, {}


def test_the_cosine_floor_is_the_models_and_absent_for_other_models() -> None:
    floor = RelevanceFloor(_no_statistics, {"local:m": 0.3})
    hits = [_hit(1, "a", 0.9), _hit(2, "b", 0.31), _hit(3, "c", 0.29)]
    kept, dropped = floor.vector("local:m", hits)
    assert kept == hits[:2]
    assert [(d.key, d.readings[0].value, d.readings[0].floor) for d in dropped] == [(hits[2].record.key, 0.29, 0.3)]
    assert floor.vector("remote:other", hits) == (hits, [])  # no calibrated floor: nothing is dropped


def test_a_full_text_hit_is_judged_by_its_own_terms_not_by_the_best_hit() -> None:
    # A Scope of 100 memories: "queue" is in 90 of them, "kafka" and "retention" in none.
    floor = RelevanceFloor(lambda scope, terms: (100, {"queue": 90}))
    weak = _hit(1, "the queue", 9.0)
    kept, dropped = floor.fts("s", ["kafka", "retention", "queue"], [weak])
    assert kept == [] and dropped[0].readings[0].value < FTS_SHARE_FLOOR
    strong = _hit(2, "Kafka retention is seven days on the queue", 1.0)
    kept, _ = floor.fts("s", ["kafka", "retention", "queue"], [strong, weak])
    assert kept == [strong]
