"""Experience search over active heads, reporting the retrieval mode that actually ran.

(Topic Memory searches through ``search.channels.ChannelSearch``, like Atomic Memory.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from powercontext.search.relevance import BelowFloor, RelevanceFloor
from powercontext.store.base import ExperienceRecord, FamilyStore, ScoredExperience, TopicRecord
from powercontext.store.core.experiences import searchable_text
from powercontext.text.normalize import normalize_query
from powercontext.text.tokenize import query_terms

FamilyMode = Literal["fts"]
H = TypeVar("H")


@dataclass(frozen=True, slots=True)
class FamilySearchOutcome(Generic[H]):
    """The hits and the mode that produced them; callers report ``mode``, never infer it."""

    hits: list[H]
    mode: FamilyMode
    below_floor: list[BelowFloor] = field(default_factory=list)  # hits the relevance floor dropped


def topic_text(record: TopicRecord) -> str:
    """What a Topic Memory's full-text index holds: its title and body."""
    return f"{record.title}\n{record.body}"


def experience_text(record: ExperienceRecord) -> str:
    """What an Experience's full-text index holds: its three fields, without the rendered labels."""
    return searchable_text(record.content)


class ExperienceSearch:
    """Searches one Scope's active Experience heads. Full text is the only path, so the mode is always fts;
    a hit below the full-text relevance floor (search/relevance.py) is not retrieved."""

    def __init__(self, store: FamilyStore) -> None:
        self._store = store
        self._floor = RelevanceFloor(store.experience_term_statistics, text_of=experience_text)

    def search(self, scope_id: str, query: str, limit: int) -> FamilySearchOutcome[ScoredExperience]:
        terms = query_terms(normalize_query(query))
        hits = self._store.search_experiences(scope_id, terms, limit)
        kept, dropped = self._floor.fts(scope_id, terms, hits)
        return FamilySearchOutcome(kept, "fts", dropped)
