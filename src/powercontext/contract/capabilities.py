"""``GET /v1/capabilities``."""

from __future__ import annotations

from pydantic import Field

from powercontext.contract.common import StrictModel


class Limits(StrictModel):
    max_bytes_min: int
    max_bytes_max: int
    max_bytes_default: int
    query_max_chars: int
    body_max_bytes: int
    batch_max_items: int
    receipt_max_bytes: int = Field(description="A Receipt whose serialized JSON is larger is dropped whole.")


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
    limits: Limits
