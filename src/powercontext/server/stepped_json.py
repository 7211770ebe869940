"""JSON parsing in steps, so a worker thread parsing a large body lets the event loop run in between.

A C JSON parser holds the interpreter lock for the whole document: 36 MB takes 0.3–0.4 s, during which
the event loop, needing the lock for any step, waits (measured: the loop's 5 ms timer fired up to 400 ms
late). Here the top two levels of the document (the request object and its arrays, such as a batch's
``items``) are walked in Python, and each value below them is parsed whole by the standard library's
decoder, so the lock changes hands between items. The result is what ``json.loads`` gives.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["loads_in_steps"]

_STEPPED_DEPTH = 2
_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def loads_in_steps(raw: bytes | bytearray) -> Any:
    """``json.loads(raw)``, taken in steps. Raises ``json.JSONDecodeError`` (or ``UnicodeDecodeError``)."""
    text = raw.decode(json.detect_encoding(raw), "surrogatepass")
    value, end = _value(text, _skip(text, 0), 0)
    if _skip(text, end) != len(text):
        raise json.JSONDecodeError("Extra data", text, end)
    return value


def _skip(text: str, index: int) -> int:
    found = _SPACE.match(text, index)
    return found.end() if found else index


def _value(text: str, index: int, depth: int) -> tuple[Any, int]:
    opening = text[index : index + 1]
    if depth >= _STEPPED_DEPTH or opening not in ("[", "{"):
        value, end = _DECODER.raw_decode(text, index)
        return value, end
    if opening == "[":
        return _array(text, _skip(text, index + 1), depth)
    return _object(text, _skip(text, index + 1), depth)


def _array(text: str, index: int, depth: int) -> tuple[list[Any], int]:
    items: list[Any] = []
    if text.startswith("]", index):
        return items, index + 1
    while True:
        item, index = _value(text, index, depth + 1)
        items.append(item)
        index = _skip(text, index)
        if text.startswith(",", index):
            index = _skip(text, index + 1)
        elif text.startswith("]", index):
            return items, index + 1
        else:
            raise json.JSONDecodeError("Expecting ',' delimiter", text, index)


def _object(text: str, index: int, depth: int) -> tuple[dict[str, Any], int]:
    members: dict[str, Any] = {}
    if text.startswith("}", index):
        return members, index + 1
    while True:
        if not text.startswith('"', index):
            raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, index)
        key, index = _DECODER.raw_decode(text, index)
        index = _skip(text, index)
        if not text.startswith(":", index):
            raise json.JSONDecodeError("Expecting ':' delimiter", text, index)
        members[key], index = _value(text, _skip(text, index + 1), depth + 1)
        index = _skip(text, index)
        if text.startswith(",", index):
            index = _skip(text, index + 1)
        elif text.startswith("}", index):
            return members, index + 1
        else:
            raise json.JSONDecodeError("Expecting ',' delimiter", text, index)
