"""``powercontext.prepared-context-receipt.v1``: the content-free record of one prepare."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictBool, StrictFloat, StrictInt

from powercontext.contract.common import (
    RECEIPT_POLICY_ID,
    RECEIPT_SCHEMA,
    ArtifactAddress,
    ArtifactId,
    CodeEvidenceRef,
    Family,
    Revision,
    ScopeId,
    StrictModel,
    require_constants,
)

Sha256Digest = str
SearchMode = Literal["fts", "vector", "hybrid", "snapshot", "code", "none"]
SearchOutcome = Literal["completed", "not_run", "failed"]
SearchFallback = Literal["none", "inference_unavailable", "inference_timeout", "reused_fts_fallback"]
OmissionReason = Literal[
    "duplicate",
    "blank",
    "family_limit",
    "entry_limit",
    "below_min_bytes",
    "no_fitting_truncation",
    "rerank_not_selected",
    "not_retrieved",
]
MAX_SELECTED = 32
MAX_ROUNDS = 3
MAX_SEARCH_GROUPS = 32
MAX_RERANK_CONFIGS = 8
MAX_RERANK_GROUPS = 32
MAX_OMITTED_GROUPS = 16
MAX_STAGES = 8
# Measured (bench/receipt_sizes.py, docs/receipts.md): the largest representative payload (26 historical items
# and 4 code ranges across eight 64-character Scopes, 2 rerank configs with custom Prompts, 3 rounds) is 15,336
# bytes; plus 10 % headroom, rounded up to a KiB.
MAX_RECEIPT_BYTES = 17408


class RecallRound(StrictModel):
    round: StrictInt = Field(ge=0, le=2)
    outcome: Literal["completed", "expansion_failed"]
    retained: StrictBool


class SearchGroup(StrictModel):
    round: StrictInt = Field(ge=0, le=2)
    family: Family
    mode: SearchMode
    outcome: SearchOutcome
    fallback_reason: SearchFallback
    count: StrictInt = Field(ge=1)


class PromptArtifactRef(StrictModel):
    family: Literal["prompt"]
    artifact_id: ArtifactId = Field(description="The Prompt key, e.g. memory.rerank.")
    revision: Revision


class PromptArtifactAddress(StrictModel):
    """The exact revision of a Scope's ``prompt`` Artifact an invocation used."""

    scope_id: ScopeId
    artifact: PromptArtifactRef


class PromptIdentity(StrictModel):
    """The ResolvedPrompt bound to an invocation, without its compiled text."""

    scope_id: str
    key: str
    definition_version: StrictInt
    builtin_version: StrictInt | None
    selection: Literal["built_in", "artifact"]
    selected_version: StrictInt
    compiled_digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    artifact_address: PromptArtifactAddress | None = Field(description="null for a built-in Prompt")


class RerankConfig(StrictModel):
    config_id: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    policy_id: str
    model: str | None
    effective_settings: dict[str, str | StrictInt | StrictFloat | StrictBool]
    timeout_seconds: StrictFloat
    max_requests: StrictInt
    config_digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    prompt: PromptIdentity | None
    non_deterministic: StrictBool


class RerankGroup(StrictModel):
    round: StrictInt = Field(ge=0, le=2)
    config_id: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    outcome: Literal["selected", "fallback", "failed"]
    fallback_reason: Literal["none", "empty_selection", "inference_unavailable", "inference_timeout", "invalid_output"]
    count: StrictInt = Field(ge=1)


class RetrievalEvidence(StrictModel):
    rounds: list[RecallRound] = Field(min_length=1, max_length=MAX_ROUNDS)
    searches: list[SearchGroup] = Field(max_length=MAX_SEARCH_GROUPS)
    rerank_configs: list[RerankConfig] = Field(max_length=MAX_RERANK_CONFIGS)
    reranks: list[RerankGroup] = Field(max_length=MAX_RERANK_GROUPS)


class SelectedArtifact(StrictModel):
    """A selected historical item, identified by its exact Scope-qualified revision."""

    family: Literal["atomic-memory", "topic-memory", "experience", "profile"]  # Prompts are never injected
    artifact_address: ArtifactAddress
    rendered_bytes: StrictInt = Field(ge=1)
    truncated: StrictBool


class SelectedCode(StrictModel):
    """A selected code range, identified by its ``CodeEvidenceRef``."""

    family: Literal["code"]
    code_evidence: CodeEvidenceRef
    rendered_bytes: StrictInt = Field(ge=1)
    truncated: StrictBool


class OmittedGroup(StrictModel):
    family: Family
    reason: OmissionReason
    count: StrictInt = Field(ge=1)


class StageTiming(StrictModel):
    stage: str = Field(min_length=1, max_length=64)
    duration_ms: StrictFloat = Field(ge=0)
    count: StrictInt = Field(ge=1)


class PreparedContextReceipt(StrictModel):
    """Exact, content-free explanation of one PreparedContext. Never inject it into a prompt."""

    model_config = StrictModel.model_config | {"json_schema_extra": require_constants("schema", "policy_id")}

    schema_: Literal["powercontext.prepared-context-receipt.v1"] = Field(
        default=RECEIPT_SCHEMA, alias="schema", serialization_alias="schema"
    )
    receipt_id: str = Field(description="Equals the response's X-PowerContext-Request-ID. Not a fetch key.")
    policy_id: Literal["powercontext.prepared-context-receipt.v1"] = RECEIPT_POLICY_ID
    query_digest: Sha256Digest = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    content_digest: Sha256Digest | None = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    requested_max_bytes: StrictInt = Field(ge=512, le=32768)
    used_bytes: StrictInt = Field(ge=0)
    truncated: StrictBool
    non_deterministic: StrictBool
    retrieval: RetrievalEvidence
    selected: list[SelectedArtifact | SelectedCode] = Field(max_length=MAX_SELECTED)
    omitted: list[OmittedGroup] = Field(max_length=MAX_OMITTED_GROUPS)
    stages: list[StageTiming] = Field(max_length=MAX_STAGES)
