"""The request body limit is the size of the largest valid request, computed from the request models."""

from __future__ import annotations

import json
from pathlib import Path

from powercontext.contract.limits import MAX_REQUEST_BODY_BYTES, largest_batch_item
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
