"""The strict four-key validator every official host runs on a PreparedContext answer.

Accepted: a JSON object with exactly ``schema``, ``status``, ``content`` and ``content_bytes`` (no
duplicates), ``schema == "powercontext.prepared-context.v1"``, and either

* ``status == "ready"``: ``content`` a non-empty string whose UTF-8 length equals ``content_bytes``,
  which is at most the ``max_bytes`` the host asked for; or
* ``status == "empty"``: ``content`` null and ``content_bytes == 0``.

Anything else — a fifth key such as ``receipt``, another schema id, a boolean for a number, NaN —
is rejected whole. The host then injects nothing; it never repairs, truncates or re-selects.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

PREPARED_CONTEXT_SCHEMA = "powercontext.prepared-context.v1"
FOUR_KEYS = frozenset({"schema", "status", "content", "content_bytes"})


class InvalidPreparedContext(ValueError):
    """Why an answer was rejected: a short fixed reason code, never any of the answer's content."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ValidatedContext(NamedTuple):
    status: str  # "ready" | "empty"
    content: str | None
    content_bytes: int


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise InvalidPreparedContext("duplicate_key")
    return dict(pairs)


def _no_constants(_: str) -> Any:
    raise InvalidPreparedContext("not_json")


def validate_prepared_context(body: bytes, max_bytes: int) -> ValidatedContext:
    """The validated answer, or ``InvalidPreparedContext`` with the first violated rule."""
    try:
        doc = json.loads(body.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        if isinstance(exc, InvalidPreparedContext):
            raise
        raise InvalidPreparedContext("not_json") from None
    if not isinstance(doc, dict):
        raise InvalidPreparedContext("not_an_object")
    if set(doc) != FOUR_KEYS:
        raise InvalidPreparedContext("extra_key" if set(doc) > FOUR_KEYS else "wrong_keys")
    if doc["schema"] != PREPARED_CONTEXT_SCHEMA:
        raise InvalidPreparedContext("schema_mismatch")
    status, content, content_bytes = doc["status"], doc["content"], doc["content_bytes"]
    if type(content_bytes) is not int or content_bytes < 0:
        raise InvalidPreparedContext("content_bytes_type")
    if status == "empty":
        if content is not None or content_bytes != 0:
            raise InvalidPreparedContext("empty_with_content")
        return ValidatedContext("empty", None, 0)
    if status != "ready":
        raise InvalidPreparedContext("status_unknown")
    if not isinstance(content, str) or not content:
        raise InvalidPreparedContext("content_type")
    try:
        encoded = content.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (JSON allows "\\ud800"); not text a host can show
        raise InvalidPreparedContext("not_utf8") from None
    if len(encoded) != content_bytes:
        raise InvalidPreparedContext("content_bytes_mismatch")
    if content_bytes > max_bytes:
        raise InvalidPreparedContext("over_budget")
    return ValidatedContext("ready", content, content_bytes)
