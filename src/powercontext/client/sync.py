"""``SyncPowerContextClient``: the blocking twin of ``PowerContextClient``.

Every public method of the async client exists here with the same name, parameters and result; each
call runs the async method to completion on an event loop the sync client owns. Use it where no event
loop is running (scripts, notebooks' plain cells excepted, threads); inside async code use the async
client.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Coroutine, Iterable, Sequence
from types import TracebackType
from typing import Any, Literal, TypeVar

import httpx

from powercontext.client import DEFAULT_BASE_URL, PowerContextClient
from powercontext.contract.capabilities import Capabilities
from powercontext.contract.code import CodeIndexResult, CodeQueryResult, CodeSnippetResult
from powercontext.contract.common import CodeEvidenceRef, MemoryKind, SearchModePolicy
from powercontext.contract.explain import ContextExplanation, ExplainContextRequest
from powercontext.contract.families import (
    ApproveDecision,
    Experience,
    ExperienceCandidate,
    ExperienceReviewResult,
    ExperienceSearchResult,
    Profile,
    RejectDecision,
    ReviseDecision,
    TopicMemory,
    TopicMemorySearchResult,
)
from powercontext.contract.memory import (
    AtomicMemory,
    AtomicMemoryBatchItem,
    AtomicMemoryCreate,
    AtomicMemoryCreated,
    AtomicMemoryList,
    AtomicMemorySearchResult,
    MemoryListState,
)
from powercontext.contract.prepare import PrepareContextRequest, PreparedContext
from powercontext.contract.prompts import PromptArtifact, PromptDemonstration, PromptKeyStatus, ResolvedPromptView
from powercontext.contract.scopes import Scope

T = TypeVar("T")


def async_methods() -> dict[str, Callable[..., Coroutine[Any, Any, Any]]]:
    """The async client's public coroutine methods (what the sync client mirrors)."""
    return {
        name: member
        for name, member in inspect.getmembers(PowerContextClient, inspect.iscoroutinefunction)
        if not name.startswith("_") and name != "aclose"
    }


class SyncPowerContextClient:
    """Blocking client. Use as ``with SyncPowerContextClient(url) as client: ...`` or call ``close()``."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        timeout: float = 30.0,
        transport: httpx.AsyncBaseTransport | None = None,
        token: str | None = None,
    ) -> None:
        self._loop = asyncio.new_event_loop()
        self._client = PowerContextClient(base_url, timeout=timeout, transport=transport, token=token)
        self.base_url = self._client.base_url

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(coroutine)

    def close(self) -> None:
        if not self._loop.is_closed():
            self._run(self._client.aclose())
            self._loop.close()

    def __enter__(self) -> SyncPowerContextClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- the async client's methods, each run to completion on this client's loop (typed one by one, so a
    # user's type checker sees the real signatures; tests/unit/test_exported_members.py keeps them in step) --

    def add_memories(self, scope_id: str, items: Sequence[AtomicMemoryCreate]) -> list[AtomicMemoryBatchItem]:
        """Create up to 500 memories in one transaction (all or nothing); see ``PowerContextClient.add_memories``."""
        return self._run(self._client.add_memories(scope_id, items))

    def add_memory(
        self,
        scope_id: str,
        text: str,
        kind: MemoryKind,
        tags: Sequence[str] = (),
        idempotency_key: str | None = None,
        observed_at: str | None = None,
    ) -> AtomicMemoryCreated:
        return self._run(self._client.add_memory(scope_id, text, kind, tags, idempotency_key, observed_at))

    def approve_candidate(
        self, scope_id: str, candidate_id: str, expected_candidate_revision: int | None = None
    ) -> ExperienceReviewResult:
        return self._run(self._client.approve_candidate(scope_id, candidate_id, expected_candidate_revision))

    def capabilities(self) -> Capabilities:
        return self._run(self._client.capabilities())

    def explain_context(self, request: ExplainContextRequest) -> ContextExplanation:
        """Why each candidate was injected or omitted in one prepare run (diagnostic; see docs/explain.md)."""
        return self._run(self._client.explain_context(request))

    def change_lifecycle(
        self, scope_id: str, artifact_id: str, action: str, expected_revision: int | None = None
    ) -> AtomicMemory:
        return self._run(self._client.change_lifecycle(scope_id, artifact_id, action, expected_revision))

    def change_topic_lifecycle(
        self,
        scope_id: str,
        artifact_id: str,
        action: Literal["retire", "restore"],
        expected_revision: int | None = None,
    ) -> TopicMemory:
        return self._run(self._client.change_topic_lifecycle(scope_id, artifact_id, action, expected_revision))

    def create_scope(self, scope_id: str, title: str, context_references: Sequence[str] = ()) -> Scope:
        return self._run(self._client.create_scope(scope_id, title, context_references))

    def create_topic(
        self, scope_id: str, title: str, body: str, tags: Sequence[str] = (), idempotency_key: str | None = None
    ) -> TopicMemory:
        return self._run(self._client.create_topic(scope_id, title, body, tags, idempotency_key))

    def forget_memory(self, scope_id: str, artifact_id: str) -> AtomicMemory:
        return self._run(self._client.forget_memory(scope_id, artifact_id))

    def get_candidate(self, scope_id: str, candidate_id: str) -> ExperienceCandidate:
        return self._run(self._client.get_candidate(scope_id, candidate_id))

    def get_experience(self, scope_id: str, artifact_id: str, revision: int | None = None) -> Experience:
        """The head, or with ``revision`` that exact immutable revision (readable after retire)."""
        return self._run(self._client.get_experience(scope_id, artifact_id, revision))

    def get_memory(self, scope_id: str, artifact_id: str, revision: int | None = None) -> AtomicMemory:
        """The head, or with ``revision`` that exact immutable revision."""
        return self._run(self._client.get_memory(scope_id, artifact_id, revision))

    def get_profile(self, scope_id: str, revision: int | None = None) -> Profile:
        """The committed head, or with ``revision`` that exact snapshot."""
        return self._run(self._client.get_profile(scope_id, revision))

    def get_prompt(self, scope_id: str, key: str) -> ResolvedPromptView:
        """The Prompt the Scope resolves for ``key`` now; ``compiled_text`` is set only with write access."""
        return self._run(self._client.get_prompt(scope_id, key))

    def get_prompt_artifact(self, scope_id: str, key: str, revision: int | None = None) -> PromptArtifact:
        """The prompt Artifact's head, or with ``revision`` that exact revision (needs write access)."""
        return self._run(self._client.get_prompt_artifact(scope_id, key, revision))

    def get_scope(self, scope_id: str) -> Scope:
        return self._run(self._client.get_scope(scope_id))

    def get_topic(self, scope_id: str, artifact_id: str, revision: int | None = None) -> TopicMemory:
        """The head, or with ``revision`` that exact immutable revision (readable after retire)."""
        return self._run(self._client.get_topic(scope_id, artifact_id, revision))

    def index_code(
        self, scope_id: str, path: str, max_file_bytes: int | None = None, timeout: float = 600.0
    ) -> CodeIndexResult:
        """Register or re-index a work tree. ``path`` is on the Server's file system (relative paths resolve"""
        return self._run(self._client.index_code(scope_id, path, max_file_bytes, timeout))

    def list_prompts(self, scope_id: str) -> list[PromptKeyStatus]:
        """Every registered key as the Scope resolves it (identity and digest)."""
        return self._run(self._client.list_prompts(scope_id))

    def list_scopes(self) -> list[Scope]:
        return self._run(self._client.list_scopes())

    def list_memories(
        self, scope_id: str, limit: int = 50, cursor: str | None = None, state: MemoryListState = "active"
    ) -> AtomicMemoryList:
        """One page of heads, newest first; pass the answer's ``next_cursor`` as ``cursor`` for the next."""
        return self._run(self._client.list_memories(scope_id, limit, cursor, state))

    def merge_memories(
        self, scope_id: str, sources: Sequence[tuple[str, int]], text: str, kind: MemoryKind, tags: Sequence[str] = ()
    ) -> AtomicMemory:
        return self._run(self._client.merge_memories(scope_id, sources, text, kind, tags))

    def prepare_context(self, request: PrepareContextRequest) -> PreparedContext:
        """Prepare one injection-ready context. Unset optional fields are not sent."""
        return self._run(self._client.prepare_context(request))

    def propose_experience(
        self,
        scope_id: str,
        situation: str,
        what_worked: str,
        what_to_avoid: str,
        tags: Sequence[str] = (),
        target_artifact_id: str | None = None,
        expected_revision: int | None = None,
    ) -> ExperienceCandidate:
        """Create a pending Candidate; with a target it proposes the next revision of that Experience."""
        return self._run(
            self._client.propose_experience(
                scope_id, situation, what_worked, what_to_avoid, tags, target_artifact_id, expected_revision
            )
        )

    def query_code(self, scope_id: str, query: str, limit: int = 10) -> CodeQueryResult:
        """Search every indexed work tree of the Scope; hits carry their exact ``CodeEvidenceRef``."""
        return self._run(self._client.query_code(scope_id, query, limit))

    def read_code_evidence(self, evidence: CodeEvidenceRef) -> CodeSnippetResult:
        """Re-read a cited range (e.g. a Receipt's ``code_evidence``) for progressive inspection."""
        return self._run(self._client.read_code_evidence(evidence))

    def read_code_snippet(
        self, scope_id: str, fingerprint: str, path: str, file_sha256: str, start_line: int, end_line: int
    ) -> CodeSnippetResult:
        """See ``PowerContextClient.read_code_snippet``."""
        return self._run(self._client.read_code_snippet(scope_id, fingerprint, path, file_sha256, start_line, end_line))

    def reject_candidate(
        self,
        scope_id: str,
        candidate_id: str,
        reason: str | None = None,
        expected_candidate_revision: int | None = None,
    ) -> ExperienceReviewResult:
        return self._run(self._client.reject_candidate(scope_id, candidate_id, reason, expected_candidate_revision))

    def retire_experience(self, scope_id: str, artifact_id: str, expected_revision: int | None = None) -> Experience:
        return self._run(self._client.retire_experience(scope_id, artifact_id, expected_revision))

    def retire_memory(self, scope_id: str, artifact_id: str) -> AtomicMemory:
        return self._run(self._client.retire_memory(scope_id, artifact_id))

    def retire_prompt(self, scope_id: str, key: str, expected_revision: int | None = None) -> ResolvedPromptView:
        return self._run(self._client.retire_prompt(scope_id, key, expected_revision))

    def review_candidate(
        self, scope_id: str, candidate_id: str, decision: ApproveDecision | RejectDecision | ReviseDecision
    ) -> ExperienceReviewResult:
        return self._run(self._client.review_candidate(scope_id, candidate_id, decision))

    def revise_memory(
        self,
        scope_id: str,
        artifact_id: str,
        expected_revision: int,
        text: str,
        kind: MemoryKind | None = None,
        tags: Sequence[str] | None = None,
    ) -> AtomicMemory:
        return self._run(self._client.revise_memory(scope_id, artifact_id, expected_revision, text, kind, tags))

    def revise_topic(
        self,
        scope_id: str,
        artifact_id: str,
        expected_revision: int,
        title: str | None = None,
        body: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> TopicMemory:
        """Write the next revision; omitted fields keep their current value."""
        return self._run(self._client.revise_topic(scope_id, artifact_id, expected_revision, title, body, tags))

    def search_experiences(self, scope_id: str, query: str, limit: int = 10) -> ExperienceSearchResult:
        return self._run(self._client.search_experiences(scope_id, query, limit))

    def search_memory(
        self, scope_id: str, query: str, mode: SearchModePolicy = "auto", limit: int = 10
    ) -> AtomicMemorySearchResult:
        return self._run(self._client.search_memory(scope_id, query, mode, limit))

    def search_topics(self, scope_id: str, query: str, limit: int = 10) -> TopicMemorySearchResult:
        return self._run(self._client.search_topics(scope_id, query, limit))

    def set_profile(self, scope_id: str, entries: Iterable[tuple[str, str]], expected_revision: int = 0) -> Profile:
        """Commit the whole Profile as the next snapshot; ``expected_revision`` is the head (0 for the first)."""
        return self._run(self._client.set_profile(scope_id, entries, expected_revision))

    def set_prompt(
        self,
        scope_id: str,
        key: str,
        instructions: str,
        demonstrations: Sequence[PromptDemonstration] = (),
        expected_revision: int = 0,
    ) -> ResolvedPromptView:
        """Write a custom revision; ``expected_revision`` is the current head (0 when the Scope has none)."""
        return self._run(self._client.set_prompt(scope_id, key, instructions, demonstrations, expected_revision))

    def set_prompt_auto(self, scope_id: str, key: str, expected_revision: int) -> ResolvedPromptView:
        """Write an auto revision: the Scope uses the built-in Prompt again."""
        return self._run(self._client.set_prompt_auto(scope_id, key, expected_revision))


def _mirror(name: str, method: Callable[..., Coroutine[Any, Any, Any]]) -> Callable[..., Any]:
    @functools.wraps(method)
    def call(self: SyncPowerContextClient, *args: Any, **kwargs: Any) -> Any:
        return self._run(getattr(self._client, name)(*args, **kwargs))

    call.__sync_untyped__ = True  # type: ignore[attr-defined]
    return call


# A method added to the async client but not yet typed above still works (untyped); the exported-members
# test names it so that it gets its typed twin.
for _name, _method in async_methods().items():
    if _name not in SyncPowerContextClient.__dict__:
        setattr(SyncPowerContextClient, _name, _mirror(_name, _method))
