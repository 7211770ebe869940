"""Scope-owned Prompts: list the keys, show a key as the Scope resolves it, set a custom one or return to
auto (compare-and-set), retire. Exact revisions are read through ``artifacts`` (family ``prompt``).

Reads need Scope read; the compiled text and the Artifact bodies are shown only to callers that may write
the Scope. Writes need Scope write (``authorize``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from fastapi import Path

from powercontext.contract.prompts import (
    PromptArtifact,
    PromptKeyList,
    PromptKeyStatus,
    PromptLifecycle,
    PromptWrite,
    ResolvedPromptView,
)
from powercontext.domain.access import Principal, ScopeForbidden
from powercontext.prompts.content import normalize, validate
from powercontext.prompts.definitions import BUILTIN_DEFINITIONS, PromptDefinition, ResolvedPrompt
from powercontext.prompts.errors import PromptUnavailable
from powercontext.prompts.resolver import ScopePromptResolver
from powercontext.runtime import Runtime
from powercontext.server.mapping import head_fields
from powercontext.server.routes.deps import PrincipalDep, RuntimeDep, errors, scope_router
from powercontext.store.base import PromptContent, PromptRecord, PromptStore
from powercontext.store.base import PromptDemonstration as StoredDemonstration
from powercontext.store.errors import StoreError

router = scope_router("prompts", "/prompts")

PromptKey = Annotated[
    str, Path(min_length=1, max_length=128, description="A registered Prompt key, e.g. memory.rerank.")
]

# One write of a key's prompt Artifact, given the store and the key's definition; returns the new head.
HeadWrite = Callable[[PromptStore, PromptDefinition], PromptRecord]
# What a write of a key's prompt Artifact may answer besides 404: a stale expected_revision, a store without Prompts.
WRITE_ERRORS = errors(409, 501)


class PromptsUnsupported(StoreError):
    code, status = "prompts-unsupported", 501

    def __init__(self) -> None:
        super().__init__("this store cannot hold Scope Prompts; every Scope uses the built-in Prompts")


def prompt_store_of(runtime: Runtime) -> PromptStore:
    store = runtime.store
    if not isinstance(store, PromptStore):
        raise PromptsUnsupported()
    return store


def require_body_access(principal: Principal, scope_id: str) -> None:
    """Prompt bodies (instructions, demonstrations, compiled text) are for callers that may write the Scope."""
    if not principal.can_write(scope_id):
        raise ScopeForbidden("read the Prompt bodies of", grant="write")


def prompt_artifact_view(record: PromptRecord) -> PromptArtifact:
    return PromptArtifact(**head_fields(record), **record.content.wire(), created_at=record.created_at)


def _view(resolved: ResolvedPrompt, head: PromptRecord | None, show_text: bool) -> ResolvedPromptView:
    selected = head if resolved.selection == "artifact" else None
    return ResolvedPromptView(
        **resolved.identity(),
        demonstration_count=0 if selected is None else len(selected.content.demonstrations),
        head_revision=0 if head is None else head.head_revision,
        head_state=None if head is None else head.state,
        compiled_text=resolved.compiled_text if show_text else None,
    )


def _resolve(runtime: Runtime, scope_id: str, key: str, principal: Principal) -> ResolvedPromptView:
    store = prompt_store_of(runtime)
    resolver = ScopePromptResolver(store)
    definition = resolver.definition(key)
    runtime.store.get_scope(scope_id)  # the prepare-path read below does not tell a missing Scope apart
    head = store.read_prompt_head(scope_id, key)
    resolved = resolver.resolve_head(scope_id, definition, head)
    return _view(resolved, head, principal.can_write(scope_id))


def _write(runtime: Runtime, scope_id: str, key: str, write: HeadWrite) -> ResolvedPromptView:
    """Runs one write of the key's prompt Artifact and shows the new head as the Scope now resolves it. Its
    caller may write the Scope (``authorize`` required it), so the compiled text is shown."""
    store = prompt_store_of(runtime)
    resolver = ScopePromptResolver(store)
    definition = resolver.definition(key)
    record = write(store, definition)
    return _view(resolver.resolve_head(scope_id, definition, record), record, show_text=True)


@router.get(
    "",
    responses=errors(501),
    summary="Every registered Prompt key as this Scope resolves it (identity and digest, never text)",
)
def list_prompts(scope_id: str, runtime: RuntimeDep) -> PromptKeyList:
    store = prompt_store_of(runtime)
    resolver = ScopePromptResolver(store)
    heads = {h.key.artifact_id: h for h in store.list_prompt_heads(scope_id)}
    items = []
    for key, definition in BUILTIN_DEFINITIONS.items():
        head = heads.get(key)
        status: Literal["built_in", "artifact", "unavailable"]
        digest: str | None
        try:
            resolved = resolver.resolve_head(scope_id, definition, head)
            status, digest = resolved.selection, resolved.compiled_digest
        except PromptUnavailable:
            status, digest = "unavailable", None
        items.append(
            PromptKeyStatus(
                key=key,
                definition_version=definition.definition_version,
                builtin_version=definition.builtin_version,
                status=status,
                compiled_digest=digest,
                head_revision=0 if head is None else head.head_revision,
                head_state=None if head is None else head.state,
                head_mode=None if head is None else head.content.mode,
            )
        )
    return PromptKeyList(items=items)


@router.get(
    "/{prompt_key}",
    responses=errors(501, 503),
    summary="The Prompt this Scope resolves for a key now (compiled text only with write access)",
)
def get_prompt(
    scope_id: str, runtime: RuntimeDep, principal: PrincipalDep, prompt_key: PromptKey
) -> ResolvedPromptView:
    return _resolve(runtime, scope_id, prompt_key, principal)


@router.put(
    "/{prompt_key}",
    responses=WRITE_ERRORS,
    summary="Write the next revision of this Scope's Prompt for a key: custom, or auto (compare-and-set)",
)
def set_prompt(scope_id: str, body: PromptWrite, runtime: RuntimeDep, prompt_key: PromptKey) -> ResolvedPromptView:
    def commit(store: PromptStore, definition: PromptDefinition) -> PromptRecord:
        content = normalize(
            PromptContent(
                mode=body.mode,
                instructions=body.instructions,
                demonstrations=tuple(StoredDemonstration(d.input, d.expected_output) for d in body.demonstrations),
                schema_version=body.schema_version,
            )
        )
        validate(definition, content)
        return runtime.writes.commit_prompt(scope_id, prompt_key, body.expected_revision, content)

    return _write(runtime, scope_id, prompt_key, commit)


@router.post(
    "/{prompt_key}/lifecycle",
    responses=WRITE_ERRORS,
    summary="Retire this Scope's Prompt for a key: it uses the built-in again; every revision stays readable",
)
def change_prompt_lifecycle(
    scope_id: str, body: PromptLifecycle, runtime: RuntimeDep, prompt_key: PromptKey
) -> ResolvedPromptView:
    return _write(
        runtime,
        scope_id,
        prompt_key,
        lambda _store, _: runtime.writes.change_prompt_lifecycle(
            scope_id, prompt_key, body.action, body.expected_revision
        ),
    )
