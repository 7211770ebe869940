"""Client-side checks of a request body: what they refuse is ``InvalidRequest`` in the Server's words, unsent."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from pydantic import ValidationError

from powercontext.errors import InvalidRequest

ProfileEntries = Mapping[str, str] | Iterable[tuple[str, str]]


def invalid_request(message: str) -> InvalidRequest:
    """The error the Server would answer (``422`` ``invalid-request``) for a body it refuses."""
    return InvalidRequest(422, "invalid-request", message)


@contextmanager
def checked_input() -> Iterator[None]:
    """A ``ValidationError`` raised in the block (a wire model built from the caller's arguments) leaves it as
    ``InvalidRequest``, worded as the Server words it (``kind: Input should be …``), the pydantic error as cause."""
    try:
        yield
    except ValidationError as exc:
        from powercontext.contract.messages import describe_error

        # As the Server: at most five failures, the field and what is wrong, never the input itself.
        errors = exc.errors(include_input=False)[:5]
        raise invalid_request("; ".join(describe_error(e, name_unknown=False) for e in errors)) from exc


def profile_entries(entries: ProfileEntries) -> list[dict[str, Any]]:
    """``entries`` (a mapping, or an iterable of ``(key, value)`` pairs) as the wire's ``[{key, value}, …]``; any
    other shape is ``InvalidRequest`` (a two-letter string is not a pair). The keys and values themselves are
    checked by the ``ProfileCommit`` model."""
    if isinstance(entries, Mapping):
        return [{"key": k, "value": v} for k, v in entries.items()]
    if isinstance(entries, str | bytes) or not isinstance(entries, Iterable):
        raise invalid_request(f"entries: a mapping of keys to values or (key, value) pairs, not {_a(entries)}")
    wire: list[dict[str, Any]] = []
    for i, pair in enumerate(entries):
        if isinstance(pair, str | bytes) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise invalid_request(f"entries.{i}: a (key, value) pair, not {_a(pair)}")
        wire.append({"key": pair[0], "value": pair[1]})
    return wire


def _a(value: object) -> str:
    """What ``value`` is, without repeating it (it may be someone's text)."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return f"a {type(value).__name__} of {len(value)} items"
    return f"a {type(value).__name__}"
