"""Scope-owned Prompt wire models (``powercontext.prompt.v1``, CONTRACTS §12)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, JsonValue, StrictInt

from powercontext.contract.common import MAX_REVISION, ArtifactAddress, LifecycleState, StrictModel

PROMPT_SCHEMA: Literal["powercontext.prompt.v1"] = "powercontext.prompt.v1"
PromptMode = Literal["auto", "custom"]
PromptSelection = Literal["built_in", "artifact"]
# Strict: lax mode would take JSON true/false as 1/0.
ExpectedRevision = Annotated[int, Field(strict=True, ge=0, le=MAX_REVISION)]


class PromptDemonstration(StrictModel):
    """A worked example. Its shape is the Prompt key's registered type (docs/prompts.md)."""

    input: JsonValue = Field(description="What the model is given, e.g. {request, candidates} for memory.rerank.")
    expected_output: JsonValue = Field(description="What it should answer, e.g. {ranks} for memory.rerank.")


class PromptWrite(StrictModel):
    """The next revision of a Scope's Prompt for one key: custom overrides the built-in guidance, auto
    returns to the built-in. Rules: auto has no instructions and no demonstrations; custom needs instructions
    with a non-space character (stored trimmed, NFC, at most 32,768 characters); at most 50 demonstrations of
    at most 64 KiB canonical JSON each; at most 256 KiB canonical JSON in all. A broken rule is a 422 whose
    code names it."""

    expected_revision: ExpectedRevision = Field(
        description="The Prompt Artifact's current head revision; 0 when the Scope has none for this key."
    )
    schema_version: Literal["powercontext.prompt.v1"] = PROMPT_SCHEMA
    mode: PromptMode
    instructions: str = Field(default="", description="The Scope's guidance; empty for auto.")
    demonstrations: list[PromptDemonstration] = Field(default_factory=list, description="Empty for auto.")


class PromptLifecycle(StrictModel):
    action: Literal["retire"] = Field(description="retire: the Scope uses the built-in again; revisions stay readable.")
    expected_revision: ExpectedRevision | None = None


class PromptArtifact(StrictModel):
    """One exact, immutable revision of a Scope's prompt Artifact, with the Artifact's current state.
    Readable only with write access on the Scope."""

    artifact_address: ArtifactAddress
    head_revision: StrictInt
    state: LifecycleState
    schema_version: str
    mode: PromptMode
    instructions: str
    demonstrations: list[PromptDemonstration]
    created_at: str


class ResolvedPromptView(StrictModel):
    """The Prompt an inference call in this Scope would use now: its content-free identity, and the compiled
    text for callers that may write the Scope."""

    scope_id: str
    key: str
    definition_version: StrictInt
    builtin_version: StrictInt
    selection: PromptSelection
    selected_version: StrictInt = Field(description="The built-in version, or the Artifact revision when selected.")
    compiled_digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    artifact_address: ArtifactAddress | None = Field(description="The exact revision used; null for built_in.")
    demonstration_count: StrictInt
    head_revision: StrictInt = Field(description="The prompt Artifact's head revision; 0 when the Scope has none.")
    head_state: LifecycleState | None = Field(description="The prompt Artifact's state; null when it has none.")
    compiled_text: str | None = Field(
        description="The text the model is sent; null unless the caller may write this Scope."
    )


class PromptKeyStatus(StrictModel):
    """One registered Prompt key as a Scope resolves it (never with text)."""

    key: str
    definition_version: StrictInt
    builtin_version: StrictInt
    status: Literal["built_in", "artifact", "unavailable"] = Field(
        description="unavailable: a custom head that cannot be honoured; using the key fails until it is fixed."
    )
    compiled_digest: str | None = Field(description="null when unavailable.")
    head_revision: StrictInt = Field(description="0 when the Scope has no prompt Artifact for the key.")
    head_state: LifecycleState | None
    head_mode: PromptMode | None


class PromptKeyList(StrictModel):
    items: list[PromptKeyStatus]


class PromptCapability(StrictModel):
    status: Literal["supported", "unsupported"] = Field(
        description="unsupported: this Server's store cannot hold Scope Prompts; every Scope uses the built-in."
    )
    definition_version: StrictInt
    builtin_version: StrictInt
