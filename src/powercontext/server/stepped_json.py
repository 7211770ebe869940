"""JSON parsing in steps, so a worker thread parsing a large body lets the event loop run in between.

A C call holds the interpreter lock from start to end, and the event loop needs the lock for any step.
One ``json.loads`` of a 36 MB batch holds it for 0.3–0.4 s; even decoding those bytes to text in one call
held it for 25–37 ms of CPU (more wall time on a busy machine, whenever the holder lost its core). Here
nothing is done to the whole document at once: its bytes are decoded a piece (1 MiB) at a time into a
window of text that holds only what is not parsed yet, the top two levels of the document (the request
object and its arrays, such as a batch's ``items``) are walked in Python, and each value below them is
parsed whole by the standard library's decoder, so the lock changes hands between items and pieces. The
result, and every refusal, is what ``json.loads(raw, object_pairs_hook=unique_members)`` gives: ``json.loads``'s,
and an object that names a key twice is refused (``DuplicateKey``) rather than keeping the last value.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

__all__ = ["DuplicateKey", "loads_in_steps", "unique_members"]

PIECE_BYTES = 1 << 20
_STEPPED_DEPTH = 2
# Walking a container costs a few microseconds of Python per member: 36 MB of "1," would take half a
# minute of CPU. No valid request has a container this long (a batch has at most 500 items), so past this
# many members the rest of the container is parsed in one C call, as ``json.loads`` would.
MAX_STEPPED_MEMBERS = 10_000
# A number that ends this close to the window's edge may go on in the next piece ("1." then "5", "1e" then
# "+5"): it is parsed again once more text is there. Strings, literals and containers end unambiguously.
_NUMBER_TAIL = 3
_SPACE = re.compile(r"[ \t\n\r]*")


class DuplicateKey(ValueError):
    """An object names ``key`` twice: ``{"text": "first", "text": "second"}`` means nothing a client intends."""

    def __init__(self, key: str) -> None:
        super().__init__("a key is given more than once")
        self.key = key


def unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json``'s ``object_pairs_hook``: the object as a dict, refused if it names a key twice."""
    members = dict(pairs)
    if len(members) < len(pairs):  # the rare case: find which key
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(key)
            seen.add(key)
    return members


_DECODER = json.JSONDecoder(object_pairs_hook=unique_members)


def loads_in_steps(raw: bytes | bytearray, piece_bytes: int = PIECE_BYTES) -> Any:
    """``json.loads(raw)``, taken in steps. Raises ``json.JSONDecodeError`` (or ``UnicodeDecodeError``)."""
    window = _Window(raw, piece_bytes)
    _skip(window)
    value = _value(window, 0)
    _skip(window)
    if _peek(window):
        raise json.JSONDecodeError("Extra data", window.text, window.index)
    return value


class _Window:
    """The document's text from the parser's position on, decoded one piece of its bytes at a time."""

    def __init__(self, raw: bytes | bytearray, piece_bytes: int) -> None:
        self._raw = raw
        self._decoder = codecs.getincrementaldecoder(json.detect_encoding(raw))("surrogatepass")
        self._decoded = 0  # bytes decoded so far
        self._piece_bytes = piece_bytes
        self._exhausted = False
        self.lookahead = max(1, piece_bytes // 4)
        self.text = ""
        self.index = 0

    def ensure(self, chars: int) -> None:
        """Decode pieces until ``chars`` characters are ahead of the parser, or the document ends."""
        while len(self.text) - self.index < chars and self.more():
            pass

    def more(self) -> bool:
        """Decode the next piece onto the text not parsed yet; False once the whole document is text.

        The piece is at least as long as that unparsed text, so a value many pieces long, decoded again
        after each piece, still costs time linear in its length.
        """
        if self._exhausted:
            return False
        size = max(self._piece_bytes, len(self.text) - self.index)
        piece = self._raw[self._decoded : self._decoded + size]
        self._decoded += len(piece)
        self._exhausted = self._decoded >= len(self._raw)
        self.text = self.text[self.index :] + self._decoder.decode(piece, self._exhausted)
        self.index = 0
        return True


def _skip(window: _Window) -> None:
    while True:
        found = _SPACE.match(window.text, window.index)
        window.index = found.end() if found else window.index
        if window.index < len(window.text) or not window.more():
            return


def _peek(window: _Window) -> str:
    """The next character, or "" at the end of the document."""
    while window.index >= len(window.text):
        if not window.more():
            return ""
    return window.text[window.index]


def _leaf(window: _Window) -> Any:
    """One value parsed whole by the C decoder; parsed again with more text if it reached the window's edge."""
    # A value that fits in what is ahead is parsed at the first try. A try that fails costs its parse and
    # the error's line count over the window, a fifth of the parse time when every fourth item failed.
    window.ensure(window.lookahead)
    while True:
        try:
            value, end = _DECODER.raw_decode(window.text, window.index)
        except json.JSONDecodeError:
            if window.more():
                continue
            raise
        if end + _NUMBER_TAIL < len(window.text) or not window.more():
            window.index = end
            return value


def _value(window: _Window, depth: int) -> Any:
    opening = _peek(window)
    if depth >= _STEPPED_DEPTH or opening not in ("[", "{"):
        return _leaf(window)
    window.index += 1
    _skip(window)
    if opening == "[":
        return _array(window, depth)
    return _object(window, depth)


def _after_member(window: _Window, closing: str) -> bool:
    """Past the separator after a member: True if the container goes on, False if it closed."""
    _skip(window)
    following = _peek(window)
    window.index += 1
    if following == ",":
        _skip(window)
        return True
    if following == closing:
        return False
    raise json.JSONDecodeError("Expecting ',' delimiter", window.text, window.index - 1)


def _array(window: _Window, depth: int) -> list[Any]:
    items: list[Any] = []
    if _peek(window) == "]":
        window.index += 1
        return items
    while True:
        items.append(_value(window, depth + 1))
        if not _after_member(window, "]"):
            return items
        if len(items) >= MAX_STEPPED_MEMBERS:
            items.extend(_rest_at_once(window, "["))
            return items


def _object(window: _Window, depth: int) -> dict[str, Any]:
    members: dict[str, Any] = {}
    if _peek(window) == "}":
        window.index += 1
        return members
    while True:
        if _peek(window) != '"':
            raise json.JSONDecodeError("Expecting property name enclosed in double quotes", window.text, window.index)
        key = _leaf(window)
        _skip(window)
        if _peek(window) != ":":
            raise json.JSONDecodeError("Expecting ':' delimiter", window.text, window.index)
        window.index += 1
        _skip(window)
        if key in members:
            raise DuplicateKey(key)
        members[key] = _value(window, depth + 1)
        if not _after_member(window, "}"):
            return members
        if len(members) >= MAX_STEPPED_MEMBERS:
            rest = _rest_at_once(window, "{")
            again = members.keys() & rest.keys()
            if again:
                raise DuplicateKey(min(again))
            members.update(rest)
            return members


def _rest_at_once(window: _Window, opening: str) -> Any:
    """The members of the current container after the parser's position, parsed as one container."""
    while window.more():
        pass
    rest, end = _DECODER.raw_decode(opening + window.text[window.index :])
    window.index += end - len(opening)
    return rest
