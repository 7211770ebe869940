"""Experience search over active heads, reporting the retrieval mode that actually ran.

(Topic Memory searches through ``search.channels.ChannelSearch``, like Atomic Memory.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from powercontext.store.base import FamilyStore, ScoredExperience
from powercontext.text.normalize import normalize_query
from powercontext.text.tokenize import query_terms

FamilyMode = Literal["fts"]
H = TypeVar("H")


@dataclass(frozen=True, slots=True)
class FamilySearchOutcome(Generic[H]):
    """The hits and the mode that produced them; callers report ``mode``, never infer it."""

    hits: list[H]
    mode: FamilyMode


class ExperienceSearch:
    """Searches one Scope's active Experience heads. Full text is the only path, so the mode is always fts."""

    def __init__(self, store: FamilyStore) -> None:
        self._store = store

    def search(self, scope_id: str, query: str, limit: int) -> FamilySearchOutcome[ScoredExperience]:
        hits = self._store.search_experiences(scope_id, query_terms(normalize_query(query)), limit)
        return FamilySearchOutcome(hits, "fts")
