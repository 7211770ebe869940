"""Atomic Memory search over active heads, with the request mode policy resolved honestly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from powercontext.contract.common import SearchModePolicy
from powercontext.store.base import ScoredMemory, Store
from powercontext.text.normalize import normalize_query
from powercontext.text.tokenize import query_terms

ActualMode = Literal["fts", "vector", "hybrid"]
FallbackReason = Literal["none", "inference_unavailable", "inference_timeout"]
AVAILABLE_MODES: tuple[SearchModePolicy, ...] = ("auto", "fts")


class ModeUnavailable(Exception):
    code, status = "mode-unavailable", 409

    def __init__(self, mode: str) -> None:
        super().__init__(
            f"search mode {mode!r} needs an embedding provider, and none is configured; use mode 'fts' or 'auto'"
        )


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """What ran: the actual mode (never ``auto``) and why it differs from the request, if it does."""

    hits: list[ScoredMemory]
    mode: ActualMode
    fallback_reason: FallbackReason


class AtomicMemorySearch:
    """Searches one Scope's active Atomic Memory heads."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def search(self, scope_id: str, query: str, mode: SearchModePolicy, limit: int) -> SearchOutcome:
        if mode in ("vector", "hybrid"):
            raise ModeUnavailable(mode)
        # ``auto`` without a provider is plain fts: a normal choice, so fallback_reason is "none".
        hits = self._store.search_text(scope_id, query_terms(normalize_query(query)), limit)
        return SearchOutcome(hits, "fts", "none")
