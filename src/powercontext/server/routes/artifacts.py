"""Exact reads for every Artifact family: the current head, and one immutable revision."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Final

from fastapi import Path

from powercontext.contract.common import MAX_REVISION, ArtifactFamily
from powercontext.contract.families import ArtifactView, Experience, Profile, TopicMemory
from powercontext.contract.memory import AtomicMemory
from powercontext.contract.prompts import PromptArtifact
from powercontext.domain.families import PROFILE_ARTIFACT_ID
from powercontext.runtime import Runtime
from powercontext.server.family_mapping import experience_view, profile_view, topic_view
from powercontext.server.mapping import memory_view
from powercontext.server.routes.deps import PrincipalDep, RuntimeDep, errors, family_store_of, scope_router
from powercontext.server.routes.profile import committed_head
from powercontext.server.routes.prompts import prompt_artifact_view, prompt_store_of, require_body_access
from powercontext.sources.lineage import lineage_of
from powercontext.store.base import MemoryRecord
from powercontext.store.errors import ArtifactNotFound

router = scope_router("artifacts", "/artifacts")

AnyArtifact = AtomicMemory | TopicMemory | Experience | Profile | PromptArtifact
HeadReader = Callable[[Runtime, str, str], AnyArtifact]
RevisionReader = Callable[[Runtime, str, str, int], AnyArtifact]
Revision = Annotated[int, Path(ge=1, le=MAX_REVISION)]


def _profile_id(runtime: Runtime, scope_id: str, artifact_id: str) -> None:
    if artifact_id != PROFILE_ARTIFACT_ID:
        runtime.store.get_scope(scope_id)
        raise ArtifactNotFound(f"a Scope's Profile always has the artifact_id {PROFILE_ARTIFACT_ID!r}")


def _profile_head(runtime: Runtime, scope_id: str, artifact_id: str) -> Profile:
    _profile_id(runtime, scope_id, artifact_id)
    return profile_view(committed_head(scope_id, runtime, family_store_of(runtime)))


def _profile_revision(runtime: Runtime, scope_id: str, artifact_id: str, revision: int) -> Profile:
    _profile_id(runtime, scope_id, artifact_id)
    return profile_view(family_store_of(runtime).read_profile_revision(scope_id, revision))


def _prompt_head(runtime: Runtime, scope_id: str, prompt_key: str) -> PromptArtifact:
    head = prompt_store_of(runtime).read_prompt_head(scope_id, prompt_key)
    if head is None:
        runtime.store.get_scope(scope_id)
        raise ArtifactNotFound("this Scope has no prompt Artifact for this key; it uses the built-in Prompt")
    return prompt_artifact_view(head)


def _memory_exact(runtime: Runtime, record: MemoryRecord) -> AtomicMemory:
    """The exact read of an Atomic Memory revision, with its lineage (the Sources it was written from)."""
    view = memory_view(record)
    refs = lineage_of(runtime.store, [record.key]).get(record.key)
    return view if not refs else view.model_copy(update={"source_refs": refs})


# One reader per family; the handlers below have no per-family branches.
HEADS: Final[dict[ArtifactFamily, HeadReader]] = {
    "atomic-memory": lambda rt, s, a: _memory_exact(rt, rt.store.read_head(s, a)),
    "topic-memory": lambda rt, s, a: topic_view(family_store_of(rt).read_topic_head(s, a)),
    "experience": lambda rt, s, a: experience_view(family_store_of(rt).read_experience_head(s, a)),
    "profile": _profile_head,
    "prompt": _prompt_head,
}
REVISIONS: Final[dict[ArtifactFamily, RevisionReader]] = {
    "atomic-memory": lambda rt, s, a, r: _memory_exact(rt, rt.store.read_revision(s, a, r)),
    "topic-memory": lambda rt, s, a, r: topic_view(family_store_of(rt).read_topic_revision(s, a, r)),
    "experience": lambda rt, s, a, r: experience_view(family_store_of(rt).read_experience_revision(s, a, r)),
    "profile": _profile_revision,
    "prompt": lambda rt, s, a, r: prompt_artifact_view(prompt_store_of(rt).read_prompt_revision(s, a, r)),
}
# Families whose bodies only callers that may write the Scope read (Scope read is checked for all).
WRITERS_ONLY: Final[frozenset[ArtifactFamily]] = frozenset({"prompt"})


@router.get(
    "/{family}/{artifact_id}", responses=errors(410), summary="Read the current head of an Artifact of any family"
)
def get_artifact_head(
    scope_id: str, family: ArtifactFamily, artifact_id: str, runtime: RuntimeDep, principal: PrincipalDep
) -> ArtifactView:
    if family in WRITERS_ONLY:
        require_body_access(principal, scope_id)
    return HEADS[family](runtime, scope_id, artifact_id)


@router.get(
    "/{family}/{artifact_id}/revisions/{revision}",
    responses=errors(410),
    summary="Read one exact, immutable revision (never follows a newer head or a merge target)",
)
def get_artifact_revision(
    scope_id: str,
    family: ArtifactFamily,
    artifact_id: str,
    runtime: RuntimeDep,
    principal: PrincipalDep,
    revision: Revision,
) -> ArtifactView:
    if family in WRITERS_ONLY:
        require_body_access(principal, scope_id)
    return REVISIONS[family](runtime, scope_id, artifact_id, revision)
