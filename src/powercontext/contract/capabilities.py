"""``GET /v1/capabilities``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictInt

from powercontext.contract.common import StrictModel
from powercontext.contract.prompts import PromptCapability


class Limits(StrictModel):
    max_bytes_min: StrictInt
    max_bytes_max: StrictInt
    max_bytes_default: StrictInt
    query_max_chars: StrictInt
    body_max_bytes: StrictInt
    batch_max_items: StrictInt
    request_max_bytes: StrictInt = Field(
        description="The largest request body any route reads: the largest of route_max_bytes, the size of the "
        "largest valid request (a full batch of the largest items)."
    )
    route_max_bytes: dict[str, StrictInt] = Field(
        default_factory=dict,
        description="Each route's body limit, keyed 'METHOD /path/template': the size of the largest valid "
        "request to it, and never under 65536. A larger body is refused with 413 body-too-large before it is "
        "parsed. A route not listed takes no body.",
    )
    receipt_max_bytes: StrictInt = Field(description="A Receipt whose serialized JSON is larger is dropped whole.")


class ExtractionCapability(StrictModel):
    extractor: Literal["explicit", "model"] = Field(
        description="explicit: only explicit statements are extracted (no generation model); model: every Source."
    )
    pending_sources: StrictInt = Field(description="Sources not extracted yet, in every Scope together.")
    source_max_bytes: StrictInt = Field(description="The largest Source content accepted, in UTF-8 bytes.")


class Capabilities(StrictModel):
    version: str
    context_versions: list[str]
    receipt_policies: list[str]
    families: list[str]
    search_modes: list[str] = Field(
        description="Request modes that work now; 'auto' resolves to one of them. vector and hybrid need a "
        "configured embedding provider that has not just failed."
    )
    embedding_model: str | None = Field(
        description="The model id stored with every vector (null without a provider); vectors of another "
        "model are never searched."
    )
    rerank: Literal["off", "listwise", "deterministic"] = Field(
        description="How Atomic Memory's coarse pool is reranked (POWERCONTEXT_RERANK): off, listwise (a "
        "generation model ranks it), or deterministic (a declared non-model reranker)."
    )
    expansion: Literal["none", "widen", "model"] = Field(
        description="Query expansion when round 0 is thin (POWERCONTEXT_EXPANSION): none, widen (any-term "
        "search), or model (a generation model proposes alternative queries)."
    )
    limits: Limits
    prompts: dict[str, PromptCapability] = Field(
        description="The registered Prompt keys a Scope may override (docs/prompts.md), with their versions."
    )
    extraction: ExtractionCapability | None = Field(
        default=None, description="Extraction of captured Sources (docs/sources.md); null when the store has none."
    )
