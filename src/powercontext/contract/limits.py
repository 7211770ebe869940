"""The largest request body the Server reads for a route, derived from the largest valid request to it.

The largest valid request is the route's body model with every field at its maximum, written the longest way
a standard JSON encoder writes it: ASCII-only output (``ensure_ascii``), so a control character becomes a
six-byte ``\\u0001`` and a character outside the Basic Multilingual Plane a twelve-byte surrogate pair, and
pretty-printed with four-space indentation. The size is computed from the model's own JSON schema (every
string, array and object in a request model is bounded there), so it follows the models when they change;
a request model with an unbounded part fails at import, not in production.

A text bounded in UTF-8 bytes carries its bound in the schema (``x-max-utf8-bytes``): its longest form is that
many one-byte control characters, six bytes each. A string whose pattern is anchored and made only of
character classes (``^[...]+$``, ``^[a-z][a-z0-9-]*$``) costs, a character, what the widest character any of
them admits costs; any other string is costed at twelve bytes a character, the most any character can take.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

from pydantic import TypeAdapter

from powercontext.contract.common import MAX_UTF8_BYTES_KEYWORD
from powercontext.contract.memory import MAX_BATCH_ITEMS, MAX_BODY_BYTES, AtomicMemoryBatchCreate, AtomicMemoryCreate
from powercontext.contract.prompts import PromptWrite

__all__ = [
    "MAX_REQUEST_BODY_BYTES",
    "PROMPT_WRITE_MAX_BYTES",
    "UnboundedRequest",
    "largest_batch_item",
    "largest_request_bytes",
    "largest_valid_request_bytes",
]

_INDENT = 4
_CONTROL_CHAR = "\x01"  # not whitespace, so a text of only these is valid; escaped as \u0001 (6 bytes)
_ASTRAL_CHAR = "\U0001f600"  # not whitespace; escaped as a surrogate pair \ud83d\ude00 (12 bytes)
_QUOTE = '"'  # printable ASCII, escaped as \" (2 bytes): the longest form of an idempotency key character
_WIDEST_CHAR_BYTES = 12
_NUMBER_BYTES = 24  # the longest repr of a float: -1.7976931348623157e+308
# A positive character class (no unescaped "]" inside, so it matches exactly one character), and an anchored
# pattern made only of such classes, each repeated or not: ^[...]+$, ^[A-Za-z][A-Za-z0-9-]*$.
_CLASS = re.compile(r"\[(?!\^)(?:[^\]\\]|\\.)+\]")
_ONLY_CLASSES = re.compile(rf"\^(?:{_CLASS.pattern}(?:[+*?]|\{{\d+(?:,\d*)?\}})?)+\$")
_ASTRAL_SAMPLES = ("\U00010000", _ASTRAL_CHAR, "\U0010ffff")

# A Prompt's content is checked after parsing (docs/prompts.md): at most 256 KiB of canonical JSON, whose
# demonstrations are free-form JSON the schema cannot bound. Written with ASCII escapes a canonical byte
# takes at most three (a 2-byte character becomes a 6-byte escape), plus room for indentation.
PROMPT_WRITE_MAX_BYTES = 1024 * 1024


class UnboundedRequest(ValueError):
    """A request model has a string, array or object with no upper bound in its schema."""


def largest_batch_item() -> dict[str, Any]:
    """One ``AtomicMemoryCreate`` with every field at its maximum, in its longest JSON form."""
    properties = AtomicMemoryCreate.model_json_schema()["properties"]
    tags = properties["tags"]
    key = next(option for option in properties["idempotency_key"]["anyOf"] if option.get("type") == "string")
    return {
        "text": _CONTROL_CHAR * MAX_BODY_BYTES,
        "kind": max(properties["kind"]["enum"], key=len),
        "tags": [_ASTRAL_CHAR * tags["items"]["maxLength"]] * tags["maxItems"],
        "idempotency_key": _QUOTE * key["maxLength"],
        "observed_at": "2000-01-01T00:00:00.000000000+00:00",  # the longest RFC 3339 form it takes
    }


@cache
def _bmp_by_escaped_bytes() -> tuple[tuple[int, str], ...]:
    """Every character of the Basic Multilingual Plane but the surrogates, grouped by its escaped size, widest
    first: printable ASCII is itself, ``"``, ``\\`` and five controls take a two-byte escape, and every other
    character a six-byte ``\\uXXXX`` (``json.dumps`` with ``ensure_ascii``; the unit tests check the limits built
    on it against ``json.dumps``)."""
    short = '"\\\b\f\n\r\t'
    plain = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) not in short)
    six = "".join(chr(c) for c in range(0x10000) if not (0x20 <= c < 0x7F or chr(c) in short or 0xD800 <= c <= 0xDFFF))
    return (6, six), (2, short), (1, plain)


@cache
def _widest_char_bytes(pattern: str | None) -> int:
    """The most bytes one character of a string matching ``pattern`` can take, escaped."""
    if pattern is None or _ONLY_CLASSES.fullmatch(pattern) is None:
        return _WIDEST_CHAR_BYTES
    return max(_widest_in_class(re.compile(one)) for one in _CLASS.findall(pattern))


def _widest_in_class(one: re.Pattern[str]) -> int:
    if any(one.fullmatch(ch) for ch in _ASTRAL_SAMPLES):
        return _WIDEST_CHAR_BYTES
    # One search per group runs in the regex engine: a Server start once spent ~100 ms here testing the
    # 63,000 characters one by one.
    return next((size for size, chars in _bmp_by_escaped_bytes() if one.search(chars)), 0)


def _string_bytes(schema: dict[str, Any]) -> int:
    if "maxLength" not in schema:
        raise UnboundedRequest("a string without maxLength")
    max_chars = int(schema["maxLength"])
    if MAX_UTF8_BYTES_KEYWORD in schema:
        max_bytes = int(schema[MAX_UTF8_BYTES_KEYWORD])
        # One-byte control characters (6 escaped) or four-byte astral ones (12 escaped, a quarter as many).
        longest = max(6 * min(max_chars, max_bytes), _WIDEST_CHAR_BYTES * min(max_chars, max_bytes // 4))
    else:
        longest = max_chars * _widest_char_bytes(schema.get("pattern"))
    return 2 + longest


def _container_bytes(parts: list[int], depth: int) -> int:
    """``[``/``{``, newline, each part on its own indented line joined by ``,``, newline, indent, close."""
    if not parts:
        return 2
    return sum(_INDENT * (depth + 1) + part for part in parts) + 2 * len(parts) + 2 + _INDENT * depth


def _value_bytes(schema: dict[str, Any], defs: dict[str, Any], depth: int) -> int:
    if "$ref" in schema:
        return _value_bytes(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, depth)
    options = schema.get("anyOf") or schema.get("oneOf") or schema.get("allOf")
    if options and "type" not in schema:  # alternatives; beside a type they are only extra rules (schema_rules)
        return max(_value_bytes(option, defs, depth) for option in options)
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        return max(len(json.dumps(value, ensure_ascii=True)) for value in values)
    kind = schema.get("type")
    if kind == "string":
        return _string_bytes(schema)
    if kind == "integer":
        if "maximum" not in schema or "minimum" not in schema:
            raise UnboundedRequest("an integer without minimum and maximum")
        return max(len(str(int(schema["maximum"]))), len(str(int(schema["minimum"]))))
    if kind == "number":
        return _NUMBER_BYTES
    if kind in ("boolean", "null"):
        return 5 if kind == "boolean" else 4
    if kind == "array":
        if "maxItems" not in schema or "items" not in schema:
            raise UnboundedRequest("an array without maxItems")
        item = _value_bytes(schema["items"], defs, depth + 1)
        return _container_bytes([item] * schema["maxItems"], depth)
    if kind == "object":
        if schema.get("additionalProperties", False) is not False:
            raise UnboundedRequest("an object with additional properties")
        properties = schema.get("properties", {}).items()
        parts = [len(json.dumps(name)) + 2 + _value_bytes(value, defs, depth + 1) for name, value in properties]
        return _container_bytes(parts, depth)
    raise UnboundedRequest(f"a value of unbounded type {kind!r}")


@cache
def largest_request_bytes(model: Any) -> int:
    """The encoded size of the largest valid request whose body is ``model`` (a type or an annotation).

    Every optional field is present: an absent field only makes a request smaller.
    """
    if model is PromptWrite:
        return PROMPT_WRITE_MAX_BYTES
    schema = TypeAdapter(model).json_schema()
    return _value_bytes(schema, schema.get("$defs", {}), 0)


def largest_valid_request_bytes(items: int = MAX_BATCH_ITEMS) -> int:
    """The encoded size of a batch of ``items`` largest items, without building it.

    The items are identical, so every item after the first adds exactly the same bytes.
    """
    one, two = _encoded_size(1), _encoded_size(2)
    return one + (items - 1) * (two - one)


def _encoded_size(items: int) -> int:
    body = {"items": [largest_batch_item()] * items}
    return len(json.dumps(body, ensure_ascii=True, indent=_INDENT).encode("ascii"))


MAX_REQUEST_BODY_BYTES = largest_request_bytes(AtomicMemoryBatchCreate)
"""The largest request any route takes: a full batch create of the largest Atomic Memories."""
