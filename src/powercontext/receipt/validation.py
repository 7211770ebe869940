"""Checks a Receipt against the build it explains, and serializes it exactly as returned."""

from __future__ import annotations

from pydantic import ValidationError

from powercontext.assembly.builder import PreparedContextBuild
from powercontext.contract.receipt import MAX_RECEIPT_BYTES, PreparedContextReceipt, SelectedArtifact
from powercontext.domain.identity import ArtifactKey
from powercontext.text.normalize import sha256_digest


class ReceiptRejected(Exception):
    """A Receipt that must not be returned. ``reason`` is a content-free code for the diagnostic."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def serialize_valid_receipt(receipt: PreparedContextReceipt, build: PreparedContextBuild, receipt_id: str) -> bytes:
    """The Receipt's JSON bytes, exactly as they go on the wire, or ``ReceiptRejected``."""
    raw = receipt.model_dump_json().encode("utf-8")
    try:
        # Re-validate from the wire form: an injected assembler may have bypassed model validation.
        checked = PreparedContextReceipt.model_validate_json(raw)
    except ValidationError as exc:
        kinds = {e["type"] for e in exc.errors()}
        raise ReceiptRejected("count_overflow" if "too_long" in kinds else "schema_violation") from None
    if len(raw) > MAX_RECEIPT_BYTES:
        raise ReceiptRejected("byte_overflow")
    if checked.receipt_id != receipt_id:
        raise ReceiptRejected("receipt_id_mismatch")
    context = build.context
    if checked.used_bytes != context.content_bytes:
        raise ReceiptRejected("used_bytes_mismatch")
    expected_digest = sha256_digest(context.content) if context.content is not None else None
    if checked.content_digest != expected_digest:
        raise ReceiptRejected("content_digest_mismatch")
    selected: list[object] = [
        ArtifactKey.from_address(s.artifact_address) if isinstance(s, SelectedArtifact) else s.code_evidence
        for s in checked.selected
    ]
    if selected != [*build.origins, *build.code_origins]:
        raise ReceiptRejected("origin_mismatch")
    rendered = [(s.rendered_bytes, s.truncated) for s in checked.selected]
    if rendered != [(i.rendered_bytes, i.truncated) for i in build.items]:
        raise ReceiptRejected("origin_mismatch")
    if checked.truncated != any(i.truncated for i in build.items):
        raise ReceiptRejected("truncated_mismatch")
    return raw
