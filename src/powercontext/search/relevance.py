"""An absolute relevance floor inside retrieval: a hit too weakly related to the query is not retrieved at all.

Ranking orders hits but says nothing about whether the best of them answers the query: a query no memory
answers still has a best hit. So each channel drops hits whose own evidence is below a floor that does not depend
on the other hits (the floor is absolute, not relative to the best hit):

- full text: the hit must match at least ``FTS_SHARE_FLOOR`` of the query's IDF mass (Σ idf of the query terms it
  holds / Σ idf of all query terms, terms absent from the Scope included), **or** at least ``FTS_MASS_FLOOR`` of
  IDF mass in absolute terms (nats). The share judges short questions; the absolute mass keeps a long query (an
  agent's whole prompt, where any one memory matches a small share) from losing the memory that answers one part;
- vectors: the hit's cosine must reach the model's floor (``COSINE_FLOORS``; a model without one has no floor).

A term weighs ``ln((1 + N) / (1 + n(t))) + 1`` here (N: the Scope's active memories, n(t): those holding the
term; the smoothed IDF of scikit-learn's TF-IDF). Unlike BM25's IDF it never falls to ~0 for a term found in
nearly every memory (a service's name in its own notes, a person's name in a chat): matching such a term is
still evidence, only weaker than matching a rare one. A term the Scope lacks weighs most.

The floors were set from the distribution of *unrelated* query-memory pairs, not from labelled answers: each
query of a suite scored against the memories of the suite's other Scopes, with their statistics, as if asked there
(``tools/floor_calibration.py``). Two suites of different shapes: the two projects of ``project-memory``
(payments vs. Kubernetes platform, ~100,000 pairs) and the thirteen chats of ``examples/eval/conversations``
(~650,000 pairs). A full-text floor only ever judges hits, i.e. pairs sharing at least one query term, so its
null distribution is that of the unrelated pairs that share one; every memory is a vector hit, so the cosine's is
that of all pairs. Each floor is the level one unrelated hit in twenty reaches (the 95th percentile), the lower of
the two suites' (the more permissive): IDF share 0.200 (project-memory; 0.298 in the chats), IDF mass 5.42 (the
chats, whose Scopes are smaller; 10.29 in project-memory), cosine 0.248 (project-memory; 0.390 between chats, which
share their small-talk topics). The 99th percentile was measured too and costs answers: paraphrased questions
share few words with their answer (docs/evaluation.md has the measurements and how to repeat them).
Hybrid search applies each channel's floor to its own list before fusion, so a hit is kept when either channel
vouches for it.

A dropped hit is not a Receipt omission (it was never retrieved, like a hit past the search's limit): the explain
view lists each one with its measure against the floor.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol, TypeVar, cast

from powercontext.domain.identity import ArtifactKey
from powercontext.text.tokenize import term_set

# Unrelated hits (see the module docstring): 95th percentile of the IDF share 0.200 and of the IDF mass 5.42.
FTS_SHARE_FLOOR: Final = 0.200
FTS_MASS_FLOOR: Final = 5.42
# The local model's (all-MiniLM-L6-v2, int8) 95th percentile of cosine over unrelated pairs: 0.248.
COSINE_FLOORS: Final[Mapping[str, float]] = {"local:all-MiniLM-L6-v2:int8-v1": 0.25}

Measure = Literal["query_idf_share", "matched_idf", "cosine"]


class _Record(Protocol):
    @property
    def key(self) -> ArtifactKey: ...
    @property
    def text(self) -> str: ...


class _Hit(Protocol):
    @property
    def record(self) -> _Record: ...
    @property
    def score(self) -> float: ...


@dataclass(frozen=True, slots=True)
class FloorReading:
    """One measure of a hit against its floor."""

    measure: Measure
    value: float
    floor: float


@dataclass(frozen=True, slots=True)
class BelowFloor:
    """A hit a channel dropped, with every measure that judged it."""

    channel: Literal["fts", "vector"]
    key: ArtifactKey
    readings: tuple[FloorReading, ...]


def term_weight(n_active: int, n_hits: int) -> float:
    """A query term's weight in the floor's measures: smoothed IDF, positive even for a term in every memory."""
    return math.log((1 + n_active) / (1 + n_hits)) + 1.0


T = TypeVar("T")  # a store's scored hit: ``record`` (with ``key`` and ``text``) and ``score``
Statistics = Callable[[str, Sequence[str]], tuple[int, dict[str, int]]]  # (scope, terms) -> (N, n(t))


def _record_text(record: Any) -> str:
    return cast(_Record, record).text


class RelevanceFloor:
    """Applies the floors of one family's channels; ``statistics`` gives the Scope's document frequencies and
    ``text_of`` a hit record's indexed text (an Atomic Memory's ``text`` unless given)."""

    def __init__(
        self,
        statistics: Statistics,
        cosine_floors: Mapping[str, float] = COSINE_FLOORS,
        text_of: Callable[[Any], str] = _record_text,
    ) -> None:
        self._statistics = statistics
        self._cosine_floors = cosine_floors
        self._text_of = text_of

    def fts(self, scope_id: str, terms: Sequence[str], hits: list[T]) -> tuple[list[T], list[BelowFloor]]:
        """The full-text hits that clear the floor (in order), and those that do not."""
        kept, dropped, _ = self.fts_shares(scope_id, terms, hits)
        return kept, dropped

    def fts_shares(
        self, scope_id: str, terms: Sequence[str], hits: list[T]
    ) -> tuple[list[T], list[BelowFloor], list[float]]:
        """``fts``, and every hit's share of the query's IDF mass (in ``hits`` order; empty without terms)."""
        if not hits or not terms:
            return hits, [], []
        active, counts = self._statistics(scope_id, terms)
        weight = {t: term_weight(active, counts.get(t, 0)) for t in dict.fromkeys(terms)}
        total = sum(weight.values())
        kept: list[T] = []
        dropped: list[BelowFloor] = []
        shares: list[float] = []
        for hit in hits:
            record = cast(_Hit, hit).record
            held = term_set(self._text_of(record))
            mass = sum(w for t, w in weight.items() if t in held)
            share = mass / total if total > 0 else 0.0
            shares.append(share)
            if share >= FTS_SHARE_FLOOR or mass >= FTS_MASS_FLOOR:
                kept.append(hit)
            else:
                readings = (
                    FloorReading("query_idf_share", share, FTS_SHARE_FLOOR),
                    FloorReading("matched_idf", mass, FTS_MASS_FLOOR),
                )
                dropped.append(BelowFloor("fts", record.key, readings))
        return kept, dropped, shares

    def vector(self, model_id: str, hits: list[T]) -> tuple[list[T], list[BelowFloor]]:
        """The vector hits (score = cosine) that clear the model's floor, and those that do not."""
        floor = self._cosine_floors.get(model_id)
        if floor is None:
            return hits, []
        kept: list[T] = []
        dropped: list[BelowFloor] = []
        for hit in hits:
            scored = cast(_Hit, hit)
            if scored.score >= floor:
                kept.append(hit)
            else:
                dropped.append(BelowFloor("vector", scored.record.key, (FloorReading("cosine", scored.score, floor),)))
        return kept, dropped
