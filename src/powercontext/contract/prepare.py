"""``POST /v1/context/prepare``: request and the ``powercontext.prepared-context.v1`` response."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, StrictBool, StrictInt, ValidationInfo, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from powercontext.contract.common import (
    NON_BLANK,
    PREPARED_CONTEXT_SCHEMA,
    ScopeId,
    StrictModel,
    require_constants,
)
from powercontext.contract.receipt import PreparedContextReceipt
from powercontext.contract.schema_rules import at_most_one_item_per, cap_when

DEFAULT_MAX_BYTES = 8000
MIN_MAX_BYTES = 512
MAX_MAX_BYTES = 32768
MAX_QUERY_CHARS = 8192
SectionFamily = Literal["memory", "topic-memory", "experience", "profile"]
# Per-section caps: 8 each, Experience 2 — so an explicit assembly asks for at most 26 historical items.
SECTION_LIMITS: dict[str, int] = {"memory": 8, "topic-memory": 8, "experience": 2, "profile": 8}


def _omitted_not_null(cls: type[BaseModel], value: object, info: ValidationInfo) -> object:
    """A field that may be absent but never ``null`` (the schema has no null for it)."""
    if value is None:
        raise ValueError(f"{info.field_name} must be omitted, not null")
    return value


class AssemblySection(StrictModel):
    """One family to assemble, and how many of its items may be injected."""

    model_config = StrictModel.model_config | {
        "json_schema_extra": cap_when("family", "experience", "limit", SECTION_LIMITS["experience"])
    }

    family: SectionFamily = Field(description="'memory' selects the atomic-memory family.")
    limit: StrictInt = Field(ge=1, le=8, description="1..8; at most 2 for experience.")

    @model_validator(mode="after")
    def _family_cap(self) -> AssemblySection:
        cap = SECTION_LIMITS[self.family]
        if self.limit > cap:
            raise ValueError(f"limit for {self.family} must be at most {cap}")
        return self


def _default_sections() -> list[AssemblySection]:
    return [AssemblySection(family="memory", limit=6), AssemblySection(family="experience", limit=2)]


class Assembly(StrictModel):
    """Explicit multi-family assembly: sections in byte-budget priority order, one per family."""

    sections: list[AssemblySection] = Field(
        default_factory=_default_sections,
        max_length=4,
        json_schema_extra=at_most_one_item_per("family", list(SECTION_LIMITS)),
        description="Default [memory 6, experience 2]; an explicit [] assembles no historical family.",
    )

    @field_validator("sections")
    @classmethod
    def _unique(cls, sections: list[AssemblySection]) -> list[AssemblySection]:
        families = [s.family for s in sections]
        if len(set(families)) != len(families):
            raise ValueError("each family may appear in at most one section")
        return sections


class PrepareContextRequest(StrictModel):
    """What a host sends before an agent handles a request."""

    scope_id: ScopeId
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS, pattern=NON_BLANK)
    max_bytes: StrictInt = Field(default=DEFAULT_MAX_BYTES, ge=MIN_MAX_BYTES, le=MAX_MAX_BYTES)
    assembly: Assembly | SkipJsonSchema[None] = Field(
        default=None,
        description="Omit for the default recall (Atomic Memory, Topic Memory and Experience, interleaved, "
        "8 items in all). Must not be null.",
    )
    include_code: StrictBool = Field(
        default=False, description="Add up to 4 exact code ranges of the Scope's indexed work trees."
    )
    include_receipt: StrictBool | None = Field(
        default=None,
        description="When true, attach a powercontext.prepared-context-receipt.v1 Receipt. "
        "Omitted, null and false are equivalent. Automatic host recall must not set it.",
    )

    _assembly_not_null = field_validator("assembly", mode="before")(_omitted_not_null)

    def to_wire(self) -> dict[str, Any]:
        """The JSON body to send: unset optional fields stay absent, so older servers accept it."""
        return self.model_dump(mode="json", exclude_unset=True, exclude_none=True)


class PreparedContext(StrictModel):
    """The injection value. Without a Receipt it has exactly four keys."""

    model_config = StrictModel.model_config | {"json_schema_extra": require_constants("schema")}

    schema_: Literal["powercontext.prepared-context.v1"] = Field(
        default=PREPARED_CONTEXT_SCHEMA, alias="schema", serialization_alias="schema"
    )
    status: Literal["ready", "empty"]
    content: str | None
    content_bytes: StrictInt = Field(ge=0)
    # Absent unless requested and built. ``"receipt": null`` is rejected on input, never produced on
    # output, and not part of the published schema: host validators treat it as a defect.
    receipt: PreparedContextReceipt | SkipJsonSchema[None] = Field(default=None, exclude_if=lambda v: v is None)

    _receipt_not_null = field_validator("receipt", mode="before")(_omitted_not_null)

    @model_validator(mode="after")
    def _status_matches_content(self) -> PreparedContext:
        if self.status == "empty":
            if self.content is not None or self.content_bytes != 0:
                raise ValueError("an empty PreparedContext has content null and content_bytes 0")
        elif self.content is None or len(self.content.encode("utf-8")) != self.content_bytes:
            raise ValueError("content_bytes must equal the UTF-8 size of content")
        return self

    @classmethod
    def empty(cls) -> PreparedContext:
        return cls(status="empty", content=None, content_bytes=0)
