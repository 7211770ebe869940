"""The request body limit is the size of the largest valid request, computed from the request models."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

import pytest
from pydantic import Field

from powercontext.contract.common import StrictModel
from powercontext.contract.limits import (
    MAX_REQUEST_BODY_BYTES,
    UnboundedRequest,
    largest_batch_item,
    largest_request_bytes,
)
from powercontext.contract.memory import MAX_BATCH_ITEMS, AtomicMemoryBatchCreate

DOCS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def test_the_limit_is_the_encoded_size_of_a_full_batch_of_the_largest_items() -> None:
    item = largest_batch_item()
    body = json.dumps({"items": [item] * MAX_BATCH_ITEMS}, ensure_ascii=True, indent=4).encode("ascii")
    batch = AtomicMemoryBatchCreate.model_validate_json(body)  # a valid request, not merely a big one
    assert len(batch.items) == MAX_BATCH_ITEMS
    assert len(batch.items[0].text.encode("utf-8")) == 8000
    assert len(body) == MAX_REQUEST_BODY_BYTES
    # The same request written compactly is smaller: indentation is part of the allowance.
    assert len(json.dumps({"items": [item] * MAX_BATCH_ITEMS}, separators=(",", ":"))) < MAX_REQUEST_BODY_BYTES


def test_the_operations_guide_states_the_limit() -> None:
    assert f"**{MAX_REQUEST_BODY_BYTES:,} bytes**" in DOCS.read_text(encoding="utf-8")


def test_a_request_model_with_an_unbounded_part_has_no_limit() -> None:
    class Unbounded(StrictModel):
        note: str

    class Bounded(StrictModel):
        note: str = Field(max_length=10)
        count: int = Field(ge=0, le=99999)

    with pytest.raises(UnboundedRequest):
        largest_request_bytes(Unbounded)
    # Ten astral characters (a twelve-byte surrogate pair each) and five digits, indented as json.dumps does.
    largest = json.dumps({"note": "\U0001f600" * 10, "count": 99999}, ensure_ascii=True, indent=4)
    assert largest_request_bytes(Bounded) == len(largest)


def _patterned(pattern: str) -> type[StrictModel]:
    class Patterned(StrictModel):
        name: str = Field(max_length=10, pattern=pattern)

    return Patterned


def _widest(chars: Iterable[str]) -> str:
    return max(chars, key=lambda ch: len(json.dumps(ch, ensure_ascii=True)))


# Every character the Server may receive: the Basic Multilingual Plane but the surrogates, and an astral one.
EVERY_CHARACTER = [chr(c) for c in [*range(0xD800), *range(0xE000, 0x10000), 0x1F600]]


@pytest.mark.parametrize(
    "pattern",
    [
        r"^[a-z]+$",  # one byte a character
        r'^[a-z"]+$',  # the quote takes a backslash
        r"^[\x21-\x7E]+$",
        r"^[\u00e9\u4e2d]+$",  # letters outside ASCII: \u00e9, six bytes
        r"^[a-z\x00-\x1f]*$",  # controls: \u0001, six bytes
        r"^[a-z\U0001F600]+$",  # an astral character: a twelve-byte surrogate pair
        r"^[^a-z]+$",  # a negated class admits astral characters
    ],
)
def test_a_string_of_one_class_is_costed_at_its_widest_valid_character(pattern: str) -> None:
    model = _patterned(pattern)
    # The oracle tries every character: the widest one that makes a valid ten-character value on its own.
    widest = _widest(ch for ch in EVERY_CHARACTER if re.fullmatch(pattern, ch * 10))
    model.model_validate({"name": widest * 10})
    assert largest_request_bytes(model) == len(json.dumps({"name": widest * 10}, ensure_ascii=True, indent=4))


@pytest.mark.parametrize(
    ("pattern", "first"),
    [
        (r"^[A-Za-z0-9][A-Za-z0-9._:@+=~-]*$", "A"),  # a Scope id: every character one byte
        (r"^[a-z][a-z\x00-\x1f]*$", "a"),
        (r"^[a-z]+[\u00e9\U0001F600]{0,9}$", "a"),
    ],
)
def test_a_string_of_several_classes_is_costed_at_the_widest_character_of_any(pattern: str, first: str) -> None:
    model = _patterned(pattern)
    later = _widest(ch for ch in EVERY_CHARACTER if re.fullmatch(pattern, first + ch))
    largest_valid = json.dumps({"name": first + later * 9}, ensure_ascii=True, indent=4)
    model.model_validate_json(largest_valid)
    # Each character is costed as the widest any class admits: the largest valid value, or a little over.
    assert largest_request_bytes(model) == len(json.dumps({"name": later * 10}, ensure_ascii=True, indent=4))
    assert largest_request_bytes(model) >= len(largest_valid)


def test_an_unanchored_pattern_admits_any_character_beside_its_match() -> None:
    model = _patterned("[a-z]")
    model.model_validate({"name": "a" + "\U0001f600" * 9})
    assert largest_request_bytes(model) == len(json.dumps({"name": "\U0001f600" * 10}, ensure_ascii=True, indent=4))
