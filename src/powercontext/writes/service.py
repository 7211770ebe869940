"""``WriteService``: Scopes, Atomic Memory and the other families, written one way whoever asks.

Rules it keeps for every caller:

- a write of new text stores that text's embedding when an embedding provider is configured, computed before the
  store's transaction opens (a slow provider never holds the write lock);
- a missing Scope is reported before any provider call (``scope-not-found``, not a provider error);
- compare-and-swap, idempotent replay and the all-or-nothing batch are the store's transaction; the service
  never retries a refused write;
- a new Atomic Memory comes with the earlier active memories it may supersede (a hint: nothing is changed).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from powercontext.contract.common import ArtifactFamily
from powercontext.domain.lifecycle import LifecycleAction
from powercontext.recall.supersession import says_something_changed, superseded
from powercontext.search.channels import ChannelSearch
from powercontext.search.embedding import GuardedEmbedder
from powercontext.store.base import (
    MemoryEdit,
    MemoryMerge,
    MemoryRecord,
    NewMemory,
    ScopeEdit,
    ScopeRecord,
    ScoredMemory,
    Store,
)
from powercontext.store.core.terms import SearchShare, search_share
from powercontext.store.removal import DeletedScope, PurgedArtifact
from powercontext.writes.capture import SourceCapture
from powercontext.writes.families import FamilyWrites

# How many full-text hits for a new memory's text are checked for what it may supersede.
SUPERSESSION_POOL = 16
# What that search may rank: the text's 12 rarest terms in the Scope, holding at most 100,000 postings. A memory's
# text is a long query; ranked whole, it cost a create ~300 ms p50 at a million memories (15-18 ms at 10,000), and
# so capped 10 ms (7 ms; bench/supersession_hint.py). The subject rule weighs rare shared terms, so the rarest are
# the ones that find an older statement: on the evaluation suites the hint finds as many replaced memories or more
# (docs/evaluation.md).
SUPERSESSION_SHARE = SearchShare(postings=100_000, terms=12)


def _observed_of(record: MemoryRecord) -> str:
    return record.observed


def _text_of(record: MemoryRecord) -> str:
    return record.text


class WriteService(SourceCapture, FamilyWrites):
    """Every write of Scopes, Atomic Memory, Topic Memory, Experience, Profile, Prompts and Sources (see the
    module)."""

    def __init__(self, store: Store, embedder: GuardedEmbedder, atomic_search: ChannelSearch[ScoredMemory]) -> None:
        super().__init__(store, embedder)
        self._atomic_search = atomic_search
        self._capture_listeners = []

    # -- Scopes --------------------------------------------------------------------------------------------------

    def create_scope(self, scope_id: str, title: str, context_references: Sequence[str]) -> ScopeRecord:
        return self.store.create_scope(scope_id, title, context_references)

    def delete_scope(self, scope_id: str) -> DeletedScope:
        """Delete the Scope and everything in it (``Store.delete_scope``)."""
        return self.store.delete_scope(scope_id)

    def update_scope(self, scope_id: str, edit: ScopeEdit, keep: Callable[[str], bool] | None = None) -> ScopeRecord:
        """Replace title and references; those for which ``keep`` is true stay (see ``Store.update_scope``)."""
        return self.store.update_scope(scope_id, edit, keep)

    # -- Atomic Memory -------------------------------------------------------------------------------------------

    def create_memories(self, scope_id: str, items: Sequence[NewMemory]) -> list[MemoryRecord]:
        """Create all ``items`` in one transaction, or none; a repeated idempotency key replays its memory."""
        if not self._embedder.configured:
            return self.store.create_memories(scope_id, items)
        self.store.get_scope(scope_id)  # a missing Scope is a 404 before any provider call
        embeddings = self._embedder.embed_for_write([item.text for item in items])
        with_vectors = [replace(item, embedding=e) for item, e in zip(items, embeddings, strict=True)]
        return self.store.create_memories(scope_id, with_vectors)

    def possibly_superseded(self, record: MemoryRecord) -> list[MemoryRecord]:
        """Active Atomic Memories of ``record``'s Scope, observed earlier, that ``record`` may replace (the
        ranking's supersession rule over a full-text search for its text). A hint: nothing is changed."""
        if not says_something_changed(record.text):
            return []  # the rule supersedes nothing for such a text: the search would be thrown away (~6 ms)
        with search_share(SUPERSESSION_SHARE):
            hits = self._atomic_search.search(record.key.scope_id, record.text, "fts", SUPERSESSION_POOL).hits
        others = [h.record for h in hits if h.record.key.artifact_id != record.key.artifact_id]
        return superseded(record.text, record.observed, others, _observed_of, _text_of)

    def revise_memory(
        self,
        scope_id: str,
        artifact_id: str,
        expected_revision: int,
        text: str,
        kind: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> MemoryRecord:
        """Write revision ``expected_revision + 1`` (compare-and-swap); a ``kind`` or ``tags`` of None keeps the
        head's."""
        edit = MemoryEdit(text, kind, None if tags is None else tuple(tags), self.embedding_for(text))
        return self.store.revise_memory(scope_id, artifact_id, expected_revision, edit)

    def merge_memories(
        self, scope_id: str, sources: Sequence[tuple[str, int]], text: str, kind: str, tags: Sequence[str]
    ) -> MemoryRecord:
        """Merge exact active revisions ``(artifact_id, revision)`` into a new Atomic Memory."""
        merge = MemoryMerge(tuple(sources), text, kind, tuple(tags), self.embedding_for(text))
        return self.store.merge_memories(scope_id, merge)

    def purge_memory(self, scope_id: str, artifact_id: str) -> PurgedArtifact:
        """Erase every revision of an Atomic Memory and remove it from every index (``Store.purge_memory``)."""
        return self.store.purge_memory(scope_id, artifact_id)

    def purge_artifact(self, scope_id: str, family: ArtifactFamily, artifact_id: str) -> PurgedArtifact:
        """The same for an Atomic Memory, Topic Memory or Experience (``Store.purge_artifact``)."""
        return self.store.purge_artifact(scope_id, family, artifact_id)

    def change_lifecycle(
        self, scope_id: str, artifact_id: str, action: LifecycleAction, expected_revision: int | None
    ) -> MemoryRecord:
        """Forget, retire or restore an Atomic Memory."""
        return self.store.change_lifecycle(scope_id, artifact_id, action, expected_revision)
