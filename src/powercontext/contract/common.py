"""Shared wire vocabulary: strict base model, identities and closed enums."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from types import UnionType
from typing import Annotated, Any, Final, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from powercontext.contract.observed import OBSERVED_PATTERN

PREPARED_CONTEXT_SCHEMA: Final = "powercontext.prepared-context.v1"
RECEIPT_SCHEMA: Final = "powercontext.prepared-context-receipt.v1"
RECEIPT_POLICY_ID: Final = "powercontext.prepared-context-receipt.v1"


class StrictModel(BaseModel):
    """Base for every wire model: unknown fields are rejected (``additionalProperties: false``).

    Every integer, boolean and number field is declared ``StrictInt``, ``StrictBool`` or ``StrictFloat``
    (a unit test walks every model to hold this), so a value is taken only in its schema's own JSON type:
    lax mode took ``"1"`` for an integer and ``1`` or ``"yes"`` for a boolean, which the published schema
    forbids. One exception, from JSON Schema itself: a number with a zero fraction (``8.0``) is an integer
    there, so an integer field takes it as that integer; ``8.5`` stays refused. A number field still takes
    an integer. Query parameters are not models: FastAPI
    parses their text as before.
    """

    # defer_build: a model's validator is built when it first validates, not when its module is imported; a
    # client command imports every model of its family but validates one answer (issue 41, start-up cost).
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        defer_build=True,
        serialize_by_alias=True,
        validate_by_name=True,
        validate_by_alias=True,
    )

    @model_validator(mode="before")
    @classmethod
    def _integral_numbers(cls, data: Any) -> Any:
        """``8.0`` for an integer field becomes ``8`` before the strict integer check (see the class doc)."""
        if not isinstance(data, dict):
            return data
        names = _integer_fields(cls)
        if not any(type(data.get(name)) is float for name in names):
            return data
        return {k: int(v) if k in names and type(v) is float and v.is_integer() else v for k, v in data.items()}


@cache
def _integer_fields(model: type[BaseModel]) -> frozenset[str]:
    """The wire names of ``model``'s integer fields (optional ones included)."""
    return frozenset(field.alias or name for name, field in model.model_fields.items() if _is_int(field.annotation))


def _is_int(annotation: Any) -> bool:
    """``int``, or ``int`` or None (``Annotated`` metadata set aside)."""
    if get_origin(annotation) is Annotated:
        return _is_int(get_args(annotation)[0])
    if annotation is int:
        return True
    options = [option for option in get_args(annotation) if option is not type(None)]
    return get_origin(annotation) in (Union, UnionType) and len(options) == 1 and _is_int(options[0])


Family = Literal["atomic-memory", "topic-memory", "experience", "profile", "code"]
ArtifactFamily = Literal["atomic-memory", "topic-memory", "experience", "profile", "prompt"]
MemoryKind = Literal["decision", "constraint", "fact", "state", "next-step", "outcome", "note"]
LifecycleState = Literal["active", "forgotten", "retired", "merged"]
SearchModePolicy = Literal["auto", "fts", "vector", "hybrid"]


# Identifiers are 1..256 characters with at least one non-space character (RFC 1435 bounds).
def require_constants(*names: str) -> Callable[[dict[str, Any]], None]:
    """JSON-schema hook: fields with a constant default are still always present on the wire."""

    def hook(schema: dict[str, Any]) -> None:
        schema["required"] = [*names, *(n for n in schema.get("required", []) if n not in names)]

    return hook


MAX_UTF8_BYTES_KEYWORD: Final = "x-max-utf8-bytes"


def utf8_bytes_schema(max_bytes: int) -> dict[str, Any]:
    """JSON-schema keywords of a text bounded in UTF-8 bytes: ``maxLength`` (a character is at least one byte,
    so it holds) and ``x-max-utf8-bytes``, the bound itself, from which the request size limits are computed."""
    return {"maxLength": max_bytes, MAX_UTF8_BYTES_KEYWORD: max_bytes}


# Revisions are SQLite integers: bounding them turns an absurd number into a 422, not an overflow.
MAX_REVISION = 2**31 - 1
Revision = Annotated[StrictInt, Field(ge=1, le=MAX_REVISION)]

# Whitespace as Python's str.isspace(), ECMA-262's \s (JSON Schema validators) and Rust's \s (pydantic)
# each define it, united: ``\S`` differs between them (U+0085, U+FEFF, U+001C..U+001F), so a pattern
# written with it would let the published schema accept text the Server refuses, or the reverse.
SPACE_CHARS = r"\t\n\x0b\x0c\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
NON_BLANK = rf"[^{SPACE_CHARS}]"  # contains a non-space character (patterns search, they are not anchored)
NO_SPACE = rf"^[^{SPACE_CHARS}]+$"
# One line: no control character, no space at either end, at least one other character.
_EDGE = rf"[^{SPACE_CHARS}\x00-\x1f\x7f]"
ONE_LINE = rf"^{_EDGE}(?:[^\x00-\x1f\x7f]*{_EDGE})?$"
# Created Scope ids must also be safe in a URL path segment (contract.scopes).
NEW_SCOPE_ID = r"^[A-Za-z0-9][A-Za-z0-9._:@+=~-]*$"
PRINTABLE_ASCII_WORD = r"^[\x21-\x7E]+$"
SHA256_DIGEST = r"^sha256:[0-9a-f]{64}$"
DIGITS = r"^[0-9]+$"
KEBAB_WORD = r"^[a-z0-9]+(-[a-z0-9]+)*$"
# What a pattern mismatch says: the pattern itself is no help to a person (the length bounds are the field's own,
# told with the pattern when it has one: tests/unit/test_pattern_messages.py keeps every pattern told).
PATTERN_MESSAGES: Final = {
    NEW_SCOPE_ID: "must start with a letter or digit and hold only letters, digits and . _ : @ + = ~ -"
    " (at most 256 characters, e.g. project:payments)",
    PRINTABLE_ASCII_WORD: "must be printable ASCII without spaces (the characters ! to ~)",
    SHA256_DIGEST: "must be sha256: followed by 64 lowercase hex digits",
    DIGITS: "must be digits only (a cursor is the next_cursor of the previous page)",
    KEBAB_WORD: "must be lowercase letters and digits, words joined by single hyphens (e.g. duplicate)",
    NON_BLANK: "must contain a non-space character",
    NO_SPACE: "must be non-empty and contain no whitespace",
    ONE_LINE: "must be one line without control characters, not starting or ending with whitespace",
    OBSERVED_PATTERN: "must be an RFC 3339 date or date-time with a zone, e.g. 2025-07-16T09:30:00Z",
}

ScopeId = Annotated[str, Field(min_length=1, max_length=256, pattern=NON_BLANK)]
ArtifactId = Annotated[str, Field(min_length=1, max_length=128, pattern=PRINTABLE_ASCII_WORD)]


class ArtifactRef(StrictModel):
    family: ArtifactFamily
    artifact_id: ArtifactId
    revision: Revision


class ArtifactAddress(StrictModel):
    """Scope-qualified exact identity of one immutable Artifact revision."""

    scope_id: ScopeId
    artifact: ArtifactRef


class CodeEvidenceRef(StrictModel):
    """Exact identity of an injected code range; ``path`` is repository-relative."""

    scope_id: ScopeId
    fingerprint: str = Field(min_length=1, max_length=128)
    path: str = Field(min_length=1, max_length=1024)
    file_sha256: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    start_line: StrictInt = Field(ge=1)
    end_line: StrictInt = Field(ge=1)
    snippet_sha256: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
