"""Characters that change how stored text reads without being seen, and how to show them instead.

Stored bodies are hostile input that reaches an agent's prompt and a person's terminal. The characters here are
the ones that act without looking like anything: controls (C0, DEL, C1, including NEL), Unicode line and
paragraph separators (a line break to anything splitting on Unicode line breaks), bidirectional controls
(text that reads differently from what it says), Unicode tag characters and the variation-selector supplement
(instructions invisible to a reviewer), other format characters (zero-width space, word joiner, BOM) and lone
surrogates (not encodable as UTF-8 at all). They are never dropped: each is shown as an escape, so a reviewer
sees that something was there and the agent cannot be told something a person cannot read.

ZWJ and ZWNJ (U+200C, U+200D) stay: scripts such as Persian and Devanagari and every emoji sequence need them.
"""

from __future__ import annotations

import re

# One class, listed range by range so the set does not depend on the Python's Unicode database version.
_INVISIBLE_RANGES = (
    "\x00-\x1f",  # C0 controls (ESC, BEL, NUL, CR, ...)
    "\x7f-\x9f",  # DEL and C1 controls (NEL U+0085, CSI U+009B, OSC U+009D, ...)
    "\u00ad",  # soft hyphen
    "\u061c",  # Arabic letter mark (bidi)
    "\u180e",  # Mongolian vowel separator
    "\u200b",  # zero-width space
    "\u200e\u200f",  # LRM, RLM (bidi)
    "\u2028\u2029",  # line separator, paragraph separator
    "\u202a-\u202e",  # bidi embeddings and overrides
    "\u2060-\u2064",  # word joiner, invisible operators
    "\u2066-\u206f",  # bidi isolates, deprecated format characters
    "\ufeff",  # zero-width no-break space (BOM)
    "\ufff9-\ufffb",  # interlinear annotation
    "\ud800-\udfff",  # lone surrogates
    "\U000e0000-\U000e007f",  # tag characters
    "\U000e0100-\U000e01ef",  # variation selectors supplement
)
INVISIBLE = re.compile("[" + "".join(_INVISIBLE_RANGES) + "]")
# What a terminal shows as is: a newline ends a line and a tab moves right; neither can rewrite what was printed.
_TERMINAL_KEEPS = frozenset("\n\t")


def visible_escape(char: str) -> str:
    """``char`` as Python writes it in a string literal: ``\\x1b``, ``\\u202e``, ``\\U000e0041``."""
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def json_escape(char: str) -> str:
    """``char`` as a JSON string escape (``\\uXXXX``; a surrogate pair above the BMP), decoding to ``char``."""
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _terminal_keeps(match: re.Match[str]) -> bool:
    found = match.group()
    if found in _TERMINAL_KEEPS:
        return True
    # CR before LF only ends a line (a CRLF file); alone it returns to the line's start and hides what was printed.
    return found == "\r" and match.string.startswith("\n", match.end())


def has_invisible(text: str) -> bool:
    """Whether ``text`` holds any character ``terminal_text`` would escape (newline, tab and CRLF aside)."""
    return any(not _terminal_keeps(m) for m in INVISIBLE.finditer(text))


def terminal_text(text: str) -> str:
    """``text`` with every invisible character but newline, tab and CRLF shown as its escape (``--json`` is the
    exact form; this one is for people)."""
    if not has_invisible(text):
        return text
    return INVISIBLE.sub(lambda m: m.group() if _terminal_keeps(m) else visible_escape(m.group()), text)
