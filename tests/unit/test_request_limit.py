"""The request body limit is the size of the largest valid request, computed from the request models."""

from __future__ import annotations

import json
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
