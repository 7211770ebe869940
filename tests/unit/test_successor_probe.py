"""What the successor probe asks the store for, and what it offers the newer-first rule (recall/successor_probe.py)."""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.domain.identity import ArtifactKey
from powercontext.recall.successor_probe import MAX_HOLDERS, MAX_POSTINGS, SuccessorProbe
from powercontext.store.base import MemoryRecord, Scored, ScoredMemory


def record(n: int, text: str) -> MemoryRecord:
    key = ArtifactKey("s", "atomic-memory", f"am_{n}", 1)
    return MemoryRecord(key, 1, "active", "fact", text, (), "2025-01-01T00:00:00Z", None, ())


ANCHOR = record(1, "Dependency updates come from Dependabot; each repo has its own dependabot.yml file.")
CHANGE = record(2, "Dependabot replaced by Renovate for all repos.")
NO_CHANGE = record(3, "Dependabot alerts are mailed to the platform channel.")


class FakeIndex:
    """Document counts and holders as a store would answer them; records what the probe asked for."""

    def __init__(self, counts: dict[str, int], holders: list[MemoryRecord]) -> None:
        self.counts = counts
        self.holders = holders
        self.asked: list[list[str]] = []

    def memories_holding(self, scope_id: str, terms: Sequence[str], limit: int) -> list[MemoryRecord]:
        self.asked.append(list(terms))
        return self.holders[:limit]

    def term_statistics(self, scope_id: str, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
        return 100, {t: self.counts[t] for t in terms if t in self.counts}


def probe(index: FakeIndex, hits: list[ScoredMemory]) -> list[str]:
    found = SuccessorProbe(index.memories_holding, index.term_statistics)("s", hits)
    return [hit.record.key.artifact_id for hit in found]


def test_only_statements_of_change_that_are_not_hits_already_are_offered() -> None:
    index = FakeIndex({"dependabot": 3, "yml": 1, "repo": 9}, [ANCHOR, NO_CHANGE, CHANGE])
    assert probe(index, [Scored(ANCHOR, 1.0)]) == ["am_2"]
    assert index.asked == [["dependabot", "repo"]]  # rarest first; "yml" only the anchor holds


def test_a_term_too_common_to_name_a_subject_is_not_read() -> None:
    index = FakeIndex({"dependabot": MAX_HOLDERS + 1, "repo": 5}, [CHANGE])
    assert probe(index, [Scored(ANCHOR, 1.0)]) == ["am_2"]
    assert index.asked == [["repo"]]


def test_the_terms_read_stay_within_the_postings_bound() -> None:
    anchors = [Scored(record(10, "alpha bravo charlie"), 1.0), Scored(record(11, "delta echo foxtrot"), 0.9)]
    each = MAX_POSTINGS // 5
    index = FakeIndex(dict.fromkeys(["alpha", "bravo", "charli", "delta", "echo", "foxtrot"], each), [CHANGE])
    assert probe(index, anchors) == ["am_2"]
    assert index.asked == [["alpha", "bravo", "charli", "delta", "echo"]]  # a sixth would pass the bound


def test_nothing_is_read_without_a_term_another_memory_holds() -> None:
    index = FakeIndex({"dependabot": 1, "repo": 1}, [CHANGE])
    assert probe(index, [Scored(ANCHOR, 1.0)]) == []
    assert index.asked == []
