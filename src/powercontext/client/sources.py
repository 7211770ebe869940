"""Client methods for Sources and the review inbox of extracted writes (mixed into ``PowerContextClient``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from powercontext.client.checks import checked_input
from powercontext.client.families import _path, _wire

if TYPE_CHECKING:
    from powercontext.contract.sources import (
        MemoryCandidate,
        MemoryCandidateList,
        Source,
        SourceCreated,
        SourceKind,
        SourceList,
        SourceOrigin,
    )


M = TypeVar("M", bound=BaseModel)


class SourceClientMixin:
    """Capture and read Sources; list and decide the extracted writes waiting for review."""

    if TYPE_CHECKING:

        async def _call(
            self, method: str, path: str, model: type[M], json: Any = None, params: dict[str, str | int] | None = None
        ) -> M: ...

    async def capture_source(
        self,
        scope_id: str,
        kind: SourceKind,
        content: str,
        observed_at: str | None = None,
        origin: SourceOrigin | None = None,
    ) -> SourceCreated:
        """Store a Source (redacted by the Server), pending extraction."""
        from powercontext.contract.sources import SourceCreate, SourceCreated, SourceOrigin
        with checked_input():
            body = SourceCreate(kind=kind, content=content, observed_at=observed_at, origin=origin or SourceOrigin())
        return await self._call("POST", _path(scope_id, "sources"), SourceCreated, _wire(body))

    async def get_source(self, scope_id: str, source_id: str) -> Source:
        """The exact read: stored content, digest, origin and extraction."""
        from powercontext.contract.sources import Source
        return await self._call("GET", _path(scope_id, "sources", source_id), Source)

    async def list_sources(self, scope_id: str, limit: int = 50, cursor: str | None = None) -> SourceList:
        """One page of the Scope's Sources, newest first; pass the answer's cursor for the next page."""
        from powercontext.contract.sources import SourceList
        params: dict[str, str | int] = {"limit": limit}
        if cursor:
            params["cursor"] = cursor
        return await self._call("GET", _path(scope_id, "sources"), SourceList, params=params)

    async def purge_source(self, scope_id: str, source_id: str) -> SourceCreated:
        """Erase the Source's content for good (irreversible)."""
        from powercontext.contract.sources import SourceCreated
        return await self._call("POST", _path(scope_id, "sources", source_id, "purge"), SourceCreated, {})

    async def list_memory_candidates(
        self, scope_id: str, status: str = "pending", limit: int = 50, cursor: str | None = None
    ) -> MemoryCandidateList:
        """Extracted writes in the review inbox, newest first (``status``: pending, approved, rejected)."""
        from powercontext.contract.sources import MemoryCandidateList
        params: dict[str, str | int] = {"status": status, "limit": limit}
        if cursor:
            params["cursor"] = cursor
        return await self._call("GET", _path(scope_id, "memory-candidates"), MemoryCandidateList, params=params)

    async def get_memory_candidate(self, scope_id: str, candidate_id: str) -> MemoryCandidate:
        """One Candidate of the review inbox: the write an extraction proposes, and its state."""
        from powercontext.contract.sources import MemoryCandidate
        return await self._call("GET", _path(scope_id, "memory-candidates", candidate_id), MemoryCandidate)

    async def approve_memory_candidate(self, scope_id: str, candidate_id: str) -> MemoryCandidate:
        """Apply it, with its Source as lineage."""
        from powercontext.contract.sources import MemoryCandidate
        path = _path(scope_id, "memory-candidates", candidate_id, "approve")
        return await self._call("POST", path, MemoryCandidate, {})

    async def reject_memory_candidate(
        self, scope_id: str, candidate_id: str, reason: str | None = None
    ) -> MemoryCandidate:
        """Decline it: nothing is written; ``reason`` is kept with the Candidate."""
        from powercontext.contract.sources import MemoryCandidate, MemoryCandidateReject
        path = _path(scope_id, "memory-candidates", candidate_id, "reject")
        with checked_input():
            body = MemoryCandidateReject(reason=reason)
        return await self._call("POST", path, MemoryCandidate, _wire(body))
