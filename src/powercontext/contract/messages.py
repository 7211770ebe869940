"""One validation failure told in a person's words, the same from the Server and from the CLI.

pydantic's own message for a pattern shows the regular expression (``String should match pattern
'[^\\t\\n\\x0b…'``), and for an unknown key says "Extra inputs are not permitted" without the key. The input
value itself is never repeated; an unknown key is named only when it looks like a field name (short, letters,
digits, ``_`` and ``-``), so a key carrying someone's text is not echoed back.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from powercontext.contract.common import PATTERN_MESSAGES

__all__ = ["describe_error", "location_of", "readable_errors"]

_FIELD_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
# How pydantic names the branch of a union in a location: a model's class name (``Assembly``) or a validator's
# (``function-after[...]``). Field names of the API are lower case and never hold brackets.
_BRANCH = re.compile(r"^(?:[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)*|[a-z-]+\[.*\])$")


def readable_errors(errors: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """pydantic's errors without a union's bookkeeping: no branch name in a location (``assembly.Assembly.sections``
    is ``assembly.sections``), and no "Input should be None" from the ``None`` of a field that may be omitted,
    when another error says what is wrong with the value given."""
    listed = []
    for err in errors:
        loc = tuple(err.get("loc", ()))
        kept = tuple(p for i, p in enumerate(loc) if i == len(loc) - 1 or not (isinstance(p, str) and _BRANCH.match(p)))
        listed.append({**err, "loc": kept})
    meaningful = [e for e in listed if e.get("type") != "none_required"]
    return meaningful or listed


def location_of(loc: Sequence[Any], *, skip: Iterable[str] = ("body",)) -> str:
    """``items.0.text`` for ``("body", "items", 0, "text")``; ``skip`` names the prefixes left out."""
    skipped = set(skip)
    return ".".join(str(p) for p in loc if p not in skipped)


def describe_error(err: Mapping[str, Any], accepted: Iterable[str] = (), *, name_unknown: bool = True) -> str:
    """``where: what is wrong`` for one pydantic error (``ValidationError.errors()`` or FastAPI's list).

    ``accepted`` are the field names the object takes: after an unknown field the nearest one is suggested and
    all are listed. ``name_unknown=False`` leaves the unknown key itself out (the Server never repeats a
    caller's text: the key may be someone's data); the CLI names it to the person who typed it.
    """
    loc: Sequence[Any] = err.get("loc", ())
    kind = err.get("type")
    where = location_of(loc) or "body"
    if kind == "json_invalid":
        return "the request body is not valid JSON"
    if kind == "string_pattern_mismatch":
        pattern = err.get("ctx", {}).get("pattern")
        return f"{where}: {PATTERN_MESSAGES.get(pattern, 'has a form this field does not take')}"
    if kind == "extra_forbidden":
        return _unknown_field(loc, sorted(accepted), name_unknown)
    if kind == "missing":
        return f"{where}: required"
    # A validator's own ValueError arrives as "Value error, <its message>": pydantic's wording, not ours.
    return f"{where}: {str(err.get('msg', 'invalid value')).removeprefix('Value error, ')}"


def _unknown_field(loc: Sequence[Any], accepted: list[str], name_unknown: bool) -> str:
    parent = location_of(loc[:-1]) or "body"
    key = str(loc[-1]) if loc else ""
    named = f"unknown field {key!r}" if name_unknown and _FIELD_NAME.match(key) else "unknown field"
    if not accepted:
        return f"{parent}: {named}; the API schema lists the accepted fields"
    near = difflib.get_close_matches(key, accepted, n=1, cutoff=0.6)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return f"{parent}: {named}{hint} (accepted: {', '.join(accepted)})"
