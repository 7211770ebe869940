"""A JSON request body parsed as the routes read it, and each refusal as a 422 that says what is wrong.

``json.loads`` takes two things no client means, and refuses one a client may well send:

- a key given twice (``{"text": "first", "text": "second"}``) keeps the last value: here it is refused, naming
  where (``stepped_json.unique_members``);
- a number past Python's digit limit (4,300 digits) is a ``ValueError`` FastAPI reported as "not valid UTF-8
  JSON": here the body is read again with a stand-in of the same sign and size order for each such number, and
  validated, so the answer names the field and its range (``max_bytes: Input should be less than or equal to …``).

Both are worked out only once the fast parse has failed: a valid body costs one ``json.loads`` with an
``object_pairs_hook``, a Python call per JSON object (a request holds few).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError
from starlette.exceptions import HTTPException

from powercontext.server.stepped_json import DuplicateKey, unique_members

__all__ = ["DUPLICATE_KEY", "body_error", "loads_body", "validation_error"]

DUPLICATE_KEY = "duplicate_key"  # the error type ``server.errors`` words, naming the key only if the route takes it


def loads_body(raw: bytes | bytearray) -> Any:
    """The body's value; a key given twice is refused (``DuplicateKey``)."""
    return json.loads(raw, object_pairs_hook=unique_members)


def body_error(raw: bytes | bytearray, exc: Exception, adapter: TypeAdapter[Any]) -> Exception:
    """What to raise for a body whose parse raised ``exc`` (a ``ValueError`` or ``RecursionError``)."""
    if isinstance(exc, UnicodeDecodeError):
        # As FastAPI raises it for bytes that are not text: ``server.errors`` answers "not valid UTF-8 JSON".
        return HTTPException(status_code=400, detail="There was an error parsing the body")
    if isinstance(exc, json.JSONDecodeError) or not isinstance(exc, ValueError):
        position = exc.pos if isinstance(exc, json.JSONDecodeError) else 0
        return RequestValidationError([{"type": "json_invalid", "loc": ("body", position), "msg": "JSON decode error"}])
    try:
        value = json.loads(raw, parse_int=_stand_in, object_pairs_hook=_Marked.of)
    except (ValueError, RecursionError):
        return RequestValidationError([{"type": "json_invalid", "loc": ("body", 0), "msg": "JSON decode error"}])
    duplicate = _first_duplicate(value)
    if duplicate is not None:
        return RequestValidationError([{"type": DUPLICATE_KEY, "loc": ("body", *duplicate), "msg": "given twice"}])
    try:
        adapter.validate_python(value)
    except ValidationError as invalid:
        return validation_error(invalid)
    # Every integer field has bounds far below 4,300 digits, so this is not reached; should one not, say why.
    limit = sys.get_int_max_str_digits()
    message = f"a number has more than {limit} digits, more than any field takes"
    return RequestValidationError([{"type": "value_error", "loc": ("body",), "msg": message}])


def validation_error(exc: ValidationError) -> RequestValidationError:
    """pydantic's errors in the shape FastAPI gives its own body errors: locations under "body", no input echoed."""
    errors = [
        {"type": e["type"], "loc": ("body", *e["loc"]), "msg": e["msg"], "ctx": e.get("ctx", {})}
        for e in exc.errors(include_url=False, include_input=False)
    ]
    return RequestValidationError(errors)


def _stand_in(digits: str) -> int:
    """An integer of the same sign and number of digits, built without parsing the text (which hits the limit)."""
    size, limit = len(digits.lstrip("-")), sys.get_int_max_str_digits()
    if not limit or size <= limit:
        return int(digits)
    magnitude: int = 10 ** (size - 1)
    return -magnitude if digits.startswith("-") else magnitude


class _Marked(dict[str, Any]):
    """An object that named ``duplicate`` twice (found again once the fast parse refused the body)."""

    duplicate: str

    @classmethod
    def of(cls, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        try:
            return unique_members(pairs)
        except DuplicateKey as exc:
            marked = cls(pairs)
            marked.duplicate = exc.key
            return marked


def _first_duplicate(value: Any) -> tuple[Any, ...] | None:
    """The location of the first key given twice, outermost first (an iterative walk: no recursion limit)."""
    pending: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while pending:
        where, node = pending.pop()
        if isinstance(node, _Marked):
            return (*where, node.duplicate)
        if isinstance(node, dict):
            pending.extend(((*where, key), member) for key, member in reversed(node.items()))
        elif isinstance(node, list):
            pending.extend(((*where, index), item) for index, item in reversed(list(enumerate(node))))
    return None
