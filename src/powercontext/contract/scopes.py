"""Scope wire models."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, StrictInt

from powercontext.contract.common import NEW_SCOPE_ID, NON_BLANK, StrictModel

# Created Scope ids must also be safe in a URL path segment, so the alphabet is narrower than the
# RFC's read bound; reads accept any 1..256 non-blank id and answer 404 when it does not exist.
NewScopeId = Annotated[
    str,
    Field(min_length=1, max_length=256, pattern=NEW_SCOPE_ID, examples=["project:payments"]),
]


def _distinct(references: list[str]) -> list[str]:
    if len(set(references)) != len(references):
        raise ValueError("each Scope may appear only once in context_references")
    return references


References = Annotated[
    list[NewScopeId],
    Field(
        max_length=64,
        description="Other Scopes that prepare also recalls from, in this order.",
        json_schema_extra={"uniqueItems": True},
    ),
    AfterValidator(_distinct),
]


class ScopeUpdate(StrictModel):
    title: str = Field(min_length=1, max_length=512, pattern=NON_BLANK)
    context_references: References = Field(default_factory=list)


class ScopeCreate(ScopeUpdate):
    scope_id: NewScopeId


class Scope(StrictModel):
    scope_id: str
    title: str
    context_references: list[str]
    created_at: str
    updated_at: str


class ScopeList(StrictModel):
    items: list[Scope]


class ScopeDelete(StrictModel):
    """``DELETE /v1/scopes/{scope_id}``'s body: ``confirm`` repeats the ``scope_id``, so no slip deletes one."""

    confirm: str = Field(min_length=1, max_length=256)  # as long as the longest scope_id (ScopeId)


class ScopeDeleted(StrictModel):
    """What deleting a Scope removed."""

    scope_id: str
    artifacts: StrictInt = Field(ge=0, description="Artifacts of every family, with all their revisions.")
    sources: StrictInt = Field(ge=0)
    code_chunks: StrictInt = Field(ge=0)
    referenced_by: list[str] = Field(description="Scopes whose context_references named it (no longer).")
