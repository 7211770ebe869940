"""The largest request body the Server reads, derived from the largest valid request.

The largest valid request is a batch create of ``MAX_BATCH_ITEMS`` Atomic Memories, each at every field's
maximum and written the longest way a standard JSON encoder writes it: ASCII-only output (``ensure_ascii``),
so a control character in ``text`` becomes a six-byte ``\\u0001`` and a character outside the Basic
Multilingual Plane in a tag becomes a twelve-byte surrogate pair, and pretty-printed with four-space
indentation. Every other request (a Topic body of 16,000 bytes, a Profile of 64 entries, a prepare) is far
smaller. The bound is computed from the models' own limits, so it follows them when they change.
"""

from __future__ import annotations

import json
from typing import Any

from powercontext.contract.memory import MAX_BATCH_ITEMS, MAX_BODY_BYTES, AtomicMemoryCreate

__all__ = ["MAX_REQUEST_BODY_BYTES", "largest_batch_item", "largest_valid_request_bytes"]

_INDENT = 4
_CONTROL_CHAR = "\x01"  # not whitespace, so a text of only these is valid; escaped as \u0001 (6 bytes)
_ASTRAL_CHAR = "\U0001f600"  # not whitespace; escaped as a surrogate pair \ud83d\ude00 (12 bytes)
_QUOTE = '"'  # printable ASCII, escaped as \" (2 bytes): the longest form of an idempotency key character


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
    }


def _encoded_size(items: int) -> int:
    body = {"items": [largest_batch_item()] * items}
    return len(json.dumps(body, ensure_ascii=True, indent=_INDENT).encode("ascii"))


def largest_valid_request_bytes(items: int = MAX_BATCH_ITEMS) -> int:
    """The encoded size of a batch of ``items`` largest items, without building it.

    The items are identical, so every item after the first adds exactly the same bytes.
    """
    one, two = _encoded_size(1), _encoded_size(2)
    return one + (items - 1) * (two - one)


MAX_REQUEST_BODY_BYTES = largest_valid_request_bytes()
