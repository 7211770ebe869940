"""Successors the query cannot find: later statements of change about the subject of the pool's leading hits.

"Which bot opens our dependency update PRs?" finds "Dependency updates come from Dependabot …", but not the later
"Dependabot replaced by Renovate for all repos": it shares no word with the question. It shares its subject with
the statement it replaces, and the subject's rarest terms name it ("dependabot", a version, a service). So for the
first ``ANCHORS`` hits of a full-text pool, the memories holding their rarest subject terms are read, those holding
rarer ones first, without a second BM25 ranking (``Store.memories_holding``), and those that say something changed
are offered to the newer-first rule (recall/supersession.py), which admits one only as the successor of a hit
whose subject it covers, observed later. Nothing else enters the pool this way.

A term counts when at least one other memory holds it (else it finds only its anchor) and at most
``MAX_HOLDERS`` do (a term that common names no one subject, and its postings would cost the read); the terms'
holders together stay under ``MAX_POSTINGS``, so the read does not grow with the Scope. docs/evaluation.md,
"Successors the query cannot find", has the measurements.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from powercontext.recall.supersession import says_something_changed, subject_terms
from powercontext.store.base import MemoryRecord, Scored, ScoredMemory

ANCHORS: Final = 3
TERMS_PER_ANCHOR: Final = 3
PROBE_LIMIT: Final = 8
MAX_HOLDERS: Final = 1_000
MAX_POSTINGS: Final = 5_000

MemoriesHolding = Callable[[str, Sequence[str], int], list[MemoryRecord]]
TermStatistics = Callable[[str, Sequence[str]], tuple[int, dict[str, int]]]


class SuccessorProbe:
    """Candidate successors of a pool's leading hits (see the module); the newer-first rule decides."""

    def __init__(self, memories_holding: MemoriesHolding, term_statistics: TermStatistics) -> None:
        self._memories_holding = memories_holding
        self._term_statistics = term_statistics

    def __call__(self, scope_id: str, hits: Sequence[ScoredMemory]) -> list[ScoredMemory]:
        """Statements of change, not among ``hits``, holding the rarest subject terms of the first hits."""
        subjects = [sorted(subject_terms(hit.record.text)) for hit in hits[:ANCHORS]]
        wanted = sorted({term for terms in subjects for term in terms})
        if not wanted:
            return []
        _, counts = self._term_statistics(scope_id, wanted)
        probe: dict[str, None] = {}
        postings = 0
        for terms in subjects:
            naming = sorted((t for t in terms if 2 <= counts.get(t, 0) <= MAX_HOLDERS), key=lambda t: (counts[t], t))
            for term in naming[:TERMS_PER_ANCHOR]:
                if term not in probe and postings + counts[term] <= MAX_POSTINGS:
                    probe[term] = None
                    postings += counts[term]
        if not probe:
            return []
        known = {hit.record.key for hit in hits}
        return [
            Scored(record, 0.0)
            for record in self._memories_holding(scope_id, list(probe), PROBE_LIMIT)
            if record.key not in known and says_something_changed(record.text)
        ]
