"""Prompt overrides: the records and the ``PromptStore`` protocol (re-exported by ``store.base``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from powercontext.contract.common import LifecycleState
from powercontext.domain.families import PromptAction
from powercontext.domain.identity import ArtifactKey

# -- Prompt --------------------------------------------------------------------------------------

# What a demonstration's input and expected output may hold: JSON, as parsed.
JsonValue: TypeAlias = bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"] | None
PromptMode = Literal["auto", "custom"]
PROMPT_SCHEMA_VERSION = "powercontext.prompt.v1"


@dataclass(frozen=True, slots=True)
class PromptDemonstration:
    """One worked example: what the model is given, and what it should answer."""

    input: JsonValue
    expected_output: JsonValue

    def wire(self) -> dict[str, JsonValue]:
        """The demonstration as its JSON object: what a revision stores, and what its size limit is measured on."""
        return {"input": self.input, "expected_output": self.expected_output}


@dataclass(frozen=True, slots=True)
class PromptContent:
    """A Scope's override of one Prompt key (``powercontext.prompt.v1``).

    The store keeps it as given; the content rules (auto ⇒ empty, custom ⇒ non-blank instructions, sizes,
    demonstration types) belong to ``powercontext.prompts.content`` and run before a commit and again at
    resolution, since a later Prompt definition may no longer accept an old revision.
    """

    mode: PromptMode
    instructions: str
    demonstrations: tuple[PromptDemonstration, ...]
    schema_version: str = PROMPT_SCHEMA_VERSION

    def wire(self) -> dict[str, JsonValue]:
        """The content as its JSON object: what a revision stores and what its size is measured on."""
        return {
            "schema_version": self.schema_version,
            "mode": self.mode,
            "instructions": self.instructions,
            "demonstrations": [d.wire() for d in self.demonstrations],
        }


@dataclass(frozen=True, slots=True)
class PromptRecord:
    """One exact, immutable revision of a Scope's ``prompt`` Artifact (``artifact_id`` = the Prompt key),
    with the Artifact's current head and lifecycle state."""

    key: ArtifactKey
    head_revision: int
    state: LifecycleState
    content: PromptContent
    created_at: str


@runtime_checkable
class PromptStore(Protocol):
    """Scope-owned Prompt overrides: at most one ``prompt`` Artifact per (Scope, Prompt key).

    Five methods, the whole surface a backend implements:

    * ``commit_prompt`` writes the next revision (1 for the first) with compare-and-set: ``expected_revision``
      is the current head revision, 0 when the Scope has no Artifact for the key; otherwise
      ``RevisionConflict``. A commit on a retired Artifact makes it active again. ``ScopeNotFound`` for an
      unknown Scope. The store does not validate the key or the content.
    * ``change_prompt_lifecycle`` applies ``retire`` (active → retired; ``NotActive`` otherwise), with an
      optional compare-and-set on the head revision; ``ArtifactNotFound`` when there is no such Artifact.
    * ``read_prompt_head`` is the head revision in any state, or None when the Scope has no Artifact for the
      key or the Scope does not exist (like ``read_profile_snapshot``: it sits on the prepare path and does
      not check the Scope).
    * ``read_prompt_revision`` is one exact revision whatever the state; ``RevisionNotFound`` /
      ``ArtifactNotFound`` / ``ScopeNotFound`` otherwise. It never follows the head.
    * ``list_prompt_heads`` is every head of the Scope (any state), ordered by key; ``ScopeNotFound`` for an
      unknown Scope.
    """

    def commit_prompt(
        self, scope_id: str, prompt_key: str, expected_revision: int, content: PromptContent
    ) -> PromptRecord: ...
    def change_prompt_lifecycle(
        self, scope_id: str, prompt_key: str, action: PromptAction, expected_revision: int | None
    ) -> PromptRecord: ...
    def read_prompt_head(self, scope_id: str, prompt_key: str) -> PromptRecord | None: ...
    def read_prompt_revision(self, scope_id: str, prompt_key: str, revision: int) -> PromptRecord: ...
    def list_prompt_heads(self, scope_id: str) -> list[PromptRecord]: ...
