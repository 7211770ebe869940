"""Definitions first: a chunk that defines an identifier the query names outranks chunks that only use it.

Someone who queries ``parse_http_response`` almost always wants where it is defined; BM25 alone prefers
the test file that repeats the name twenty times. The check is a line-anchored pattern per common
language keyword (``def``, ``class``, ``function``, ``fn``, ``func``, ``type``…) or a top-level
assignment, on the chunk's own text; it only reorders the candidates full-text search already found.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypeVar

_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_KEYWORDS = (
    r"(?:async\s+)?def|class|(?:export\s+)?(?:default\s+)?(?:async\s+)?function\*?|fn|pub\s+fn|func(?:\s*\([^)]*\))?"
    r"|interface|type|struct|enum|trait|impl|module|record|object"
)
# Variables define a name only at the top level: an indented ``const rows = …`` is a local.
_TOP_LEVEL_KEYWORDS = r"(?:export\s+)?(?:const|let|var)"
_MIN_LENGTH = 4  # shorter names ("id", "run") are defined everywhere; reordering by them would be noise

T = TypeVar("T")


def query_identifiers(query: str) -> list[str]:
    """Identifier-shaped words of the query (at least 4 characters), in order, without repeats."""
    seen: dict[str, None] = {}
    for word in _IDENTIFIER.findall(query):
        if len(word) >= _MIN_LENGTH:
            seen.setdefault(word, None)
    return list(seen)


def _definition_pattern(names: Sequence[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(n) for n in names)
    keyword_form = rf"^[ \t]*(?:@[^\n]*\n[ \t]*)*(?:{_KEYWORDS})[ \t]+(?:{alternatives})\b"
    variable_form = rf"^{_TOP_LEVEL_KEYWORDS}[ \t]+(?:{alternatives})\b"
    assignment_form = rf"^(?:{alternatives})[ \t]*(?::[^=\n]*)?=(?!=)"
    return re.compile(f"{keyword_form}|{variable_form}|{assignment_form}", re.MULTILINE)


def defines(text: str, names: Sequence[str]) -> bool:
    """Whether ``text`` defines one of ``names`` (see the module docstring for what counts)."""
    return bool(names) and _definition_pattern(names).search(text) is not None


def definitions_first(items: Sequence[T], texts: Sequence[str], query: str) -> list[T]:
    """``items`` (best first) with those whose text defines a query identifier moved to the front,
    each group keeping its order."""
    defining, rest = split_definitions(items, texts, query)
    return defining + rest


def split_definitions(items: Sequence[T], texts: Sequence[str], query: str) -> tuple[list[T], list[T]]:
    """``items`` (best first) split into those whose text defines a query identifier and the rest, each in
    its order; ``([], items)`` when the query names no identifier or nothing defines one."""
    names = query_identifiers(query)
    if not names:
        return [], list(items)
    pattern = _definition_pattern(names)
    defining = [item for item, text in zip(items, texts, strict=True) if pattern.search(text)]
    if not defining:
        return [], list(items)
    rest = [item for item, text in zip(items, texts, strict=True) if not pattern.search(text)]
    return defining, rest
