"""The family part of ``WriteService``: Topic Memory, Experience, Profile and Scope-owned Prompts.

Kept beside ``service`` so each module stays readable; ``WriteService`` is the only class callers see.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from powercontext.domain.families import ExperienceAction, PromptAction, TopicAction
from powercontext.search.embedding import GuardedEmbedder
from powercontext.store.base import (
    CandidateRecord,
    Embedding,
    ExperienceDraft,
    ExperienceRecord,
    FamilyStore,
    NewTopic,
    ProfileEntry,
    ProfileRecord,
    PromptContent,
    PromptRecord,
    PromptStore,
    Store,
    TopicEdit,
    TopicRecord,
)
from powercontext.store.errors import FamilyUnsupported


class FamilyWrites:
    """Writes of the families beside Atomic Memory, and the embedding every write of new text stores."""

    def __init__(self, store: Store, embedder: GuardedEmbedder) -> None:
        self.store = store
        self._embedder = embedder

    def embedding_for(self, text: str) -> Embedding | None:
        """The embedding a write of ``text`` stores: by the configured provider, or None without one."""
        return self._embedder.embed_for_write([text])[0]

    def _families(self) -> FamilyStore:
        """The store as a ``FamilyStore``; ``family-unsupported`` if its adapter predates the families (the routes
        answer that before calling here)."""
        if not isinstance(self.store, FamilyStore):
            raise FamilyUnsupported()
        return self.store

    def _prompts(self) -> PromptStore:
        if not isinstance(self.store, PromptStore):
            raise FamilyUnsupported()
        return self.store

    # -- Topic Memory --------------------------------------------------------------------------------------------

    def create_topic(self, scope_id: str, item: NewTopic) -> TopicRecord:
        store = self._families()
        self.store.get_scope(scope_id)  # a missing Scope is a 404 before any provider call
        embedding = self.embedding_for(f"{item.title}\n\n{item.body}")
        return store.create_topic(scope_id, replace(item, embedding=embedding))

    def revise_topic(self, scope_id: str, artifact_id: str, expected_revision: int, edit: TopicEdit) -> TopicRecord:
        store = self._families()
        if self._embedder.configured:
            # The new revision's text decides its embedding; the store's compare-and-swap still guards against a
            # revision written between this read and the write.
            head = store.read_topic_head(scope_id, artifact_id)
            if head.head_revision == expected_revision:
                title, body = edit.title_and_body(head.title, head.body)
                edit = replace(edit, embedding=self.embedding_for(f"{title}\n\n{body}"))
        return store.revise_topic(scope_id, artifact_id, expected_revision, edit)

    def change_topic_lifecycle(
        self, scope_id: str, artifact_id: str, action: TopicAction, expected_revision: int | None
    ) -> TopicRecord:
        return self._families().change_topic_lifecycle(scope_id, artifact_id, action, expected_revision)

    # -- Experience ----------------------------------------------------------------------------------------------

    def propose_experience(self, scope_id: str, draft: ExperienceDraft) -> CandidateRecord:
        return self._families().propose_experience(scope_id, draft)

    def approve_candidate(
        self, scope_id: str, candidate_id: str, expected_candidate_revision: int | None
    ) -> tuple[CandidateRecord, ExperienceRecord]:
        return self._families().approve_candidate(scope_id, candidate_id, expected_candidate_revision)

    def reject_candidate(
        self, scope_id: str, candidate_id: str, expected_candidate_revision: int | None, reason: str | None
    ) -> CandidateRecord:
        return self._families().reject_candidate(scope_id, candidate_id, expected_candidate_revision, reason)

    def revise_candidate(
        self, scope_id: str, candidate_id: str, expected_candidate_revision: int, draft: ExperienceDraft
    ) -> CandidateRecord:
        return self._families().revise_candidate(scope_id, candidate_id, expected_candidate_revision, draft)

    def change_experience_lifecycle(
        self, scope_id: str, artifact_id: str, action: ExperienceAction, expected_revision: int | None
    ) -> ExperienceRecord:
        return self._families().change_experience_lifecycle(scope_id, artifact_id, action, expected_revision)

    # -- Profile and Prompts -------------------------------------------------------------------------------------

    def commit_profile(self, scope_id: str, expected_revision: int, entries: Sequence[ProfileEntry]) -> ProfileRecord:
        return self._families().commit_profile(scope_id, expected_revision, entries)

    def commit_prompt(
        self, scope_id: str, prompt_key: str, expected_revision: int, content: PromptContent
    ) -> PromptRecord:
        return self._prompts().commit_prompt(scope_id, prompt_key, expected_revision, content)

    def change_prompt_lifecycle(
        self, scope_id: str, prompt_key: str, action: PromptAction, expected_revision: int | None
    ) -> PromptRecord:
        return self._prompts().change_prompt_lifecycle(scope_id, prompt_key, action, expected_revision)
