"""Checks a Receipt against the build it explains, and serializes it exactly as returned.

Checks run on the Receipt's wire data (the JSON object as a dict), so the same checks serve the
built-in assembler's plain data and an injected assembler's model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from powercontext.assembly.builder import PreparedContextBuild
from powercontext.contract.receipt import (
    MAX_OMITTED_GROUPS,
    MAX_RECEIPT_BYTES,
    MAX_RERANK_CONFIGS,
    MAX_RERANK_GROUPS,
    MAX_ROUNDS,
    MAX_SEARCH_GROUPS,
    MAX_SELECTED,
    MAX_STAGES,
    PreparedContextReceipt,
)
from powercontext.text.normalize import sha256_digest

_RETRIEVAL_CAPS = {
    "rounds": MAX_ROUNDS,
    "searches": MAX_SEARCH_GROUPS,
    "rerank_configs": MAX_RERANK_CONFIGS,
    "reranks": MAX_RERANK_GROUPS,
}
_CAPS = {"selected": MAX_SELECTED, "omitted": MAX_OMITTED_GROUPS, "stages": MAX_STAGES}


class ReceiptRejected(Exception):
    """A Receipt that must not be returned. ``reason`` is a content-free code for the diagnostic."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def rejection_for(exc: ValidationError) -> ReceiptRejected:
    """The content-free reason for a schema failure (pydantic's message may quote values)."""
    kinds = {e["type"] for e in exc.errors()}
    return ReceiptRejected("count_overflow" if "too_long" in kinds else "schema_violation")


def model_wire_data(receipt: PreparedContextReceipt) -> dict[str, Any]:
    """An injected assembler's model as wire data, re-validated from JSON: models built with
    ``model_construct`` or ``model_copy(update=...)`` skipped validation."""
    try:
        checked = PreparedContextReceipt.model_validate_json(receipt.model_dump_json())
    except ValidationError as exc:
        raise rejection_for(exc) from None
    return checked.model_dump(mode="json")


def serialize_valid_receipt(data: Mapping[str, Any], build: PreparedContextBuild, receipt_id: str) -> bytes:
    """The Receipt's exact wire bytes, after checking it explains ``build``; else ``ReceiptRejected``."""
    retrieval = data["retrieval"]
    if any(len(retrieval[k]) > cap for k, cap in _RETRIEVAL_CAPS.items()) or any(
        len(data[k]) > cap for k, cap in _CAPS.items()
    ):
        raise ReceiptRejected("count_overflow")
    if data["receipt_id"] != receipt_id:
        raise ReceiptRejected("receipt_id_mismatch")
    context = build.context
    if data["used_bytes"] != context.content_bytes:
        raise ReceiptRejected("used_bytes_mismatch")
    expected_digest = sha256_digest(context.content) if context.content is not None else None
    if data["content_digest"] != expected_digest:
        raise ReceiptRejected("content_digest_mismatch")
    expected: list[tuple[str, str, Any, int, bool]] = [
        (
            i.key.family,
            "artifact_address",
            {
                "scope_id": i.key.scope_id,
                "artifact": {"family": i.key.family, "artifact_id": i.key.artifact_id, "revision": i.key.revision},
            },
            i.rendered_bytes,
            i.truncated,
        )
        for i in build.items
    ]
    expected += [
        ("code", "code_evidence", c.ref.model_dump(mode="json"), c.rendered_bytes, c.truncated)
        for c in build.code_items
    ]
    # Ordered, complete and unambiguous: origins then code origins, each item with exactly one identity field.
    selected = [_selected_identity(s) for s in data["selected"]]
    if selected != expected:
        raise ReceiptRejected("origin_mismatch")
    if data["truncated"] != build.truncated:
        raise ReceiptRejected("truncated_mismatch")
    raw = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(raw) > MAX_RECEIPT_BYTES:
        raise ReceiptRejected("byte_overflow")
    return raw


def _selected_identity(item: Mapping[str, Any]) -> tuple[str, str, Any, int, bool] | None:
    fields = [f for f in ("artifact_address", "code_evidence") if item.get(f) is not None]
    if len(fields) != 1:
        return None
    return (item.get("family"), fields[0], item[fields[0]], item.get("rendered_bytes"), item.get("truncated"))  # type: ignore[return-value]
