"""Chunking a file's lines into citeable ranges.

Where a language is known, a chunk starts at a top-level definition (Python ``def``/``class`` and
their decorators, JS/TS ``function``/``class``/``export``/arrow constants, Go ``func``/``type``, Rust
items, Java type and member declarations at indentation ≤ 4), pulling in the comments, decorators,
annotations or attributes directly above it. A unit over ``MAX_CHUNK_LINES`` lines or
``MAX_CHUNK_BYTES`` bytes is split first at member definitions (methods), then into windows of
``WINDOW_LINES``. Other files are cut into windows. Finally, units under ``MIN_CHUNK_LINES`` lines join a
neighbour while the result stays within one window. The ranges partition the file: every line is in
exactly one chunk, in order. Ranges are 1-based and inclusive.

These are cheap line heuristics, not a parser: a definition-like line inside a multi-line string
still starts a chunk, which only moves a boundary.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

WINDOW_LINES: Final = 60
MAX_CHUNK_LINES: Final = 120
MAX_CHUNK_BYTES: Final = 8 * 1024
MIN_CHUNK_LINES: Final = 8


@dataclass(frozen=True, slots=True)
class LineRange:
    """Lines ``start_line..end_line``, 1-based and inclusive."""

    start_line: int
    end_line: int

    def of(self, lines: Sequence[str]) -> Sequence[str]:
        """These lines of a file's ``lines``, which are indexed from 0."""
        return lines[self.start_line - 1 : self.end_line]


@dataclass(frozen=True, slots=True)
class _Rules:
    """Where a language's definitions start: the lines a chunk may begin at, first and second choice."""

    primary: re.Pattern[str]
    secondary: re.Pattern[str] | None
    attached: tuple[str, ...]  # prefixes of the stripped lines that belong to the definition below


_C_COMMENTS = ("//", "/*", "*")
_JAVA_MODIFIERS = r"(?:(?:public|protected|private|static|final|abstract|sealed|non-sealed|strictfp)\s+)*"
_RULES: Final[dict[str, _Rules]] = {
    "python": _Rules(
        re.compile(r"(?:async[ \t]+def|def|class)\b"),
        re.compile(r"(?: {2,4}|\t)(?:async[ \t]+def|def|class)\b"),
        ("#", "@"),
    ),
    "javascript": _Rules(
        re.compile(
            r"(?:export\s+(?:default\s+)?)?(?:declare\s+)?(?:async\s+)?function\b"
            r"|(?:export\s+(?:default\s+)?)?(?:declare\s+)?(?:abstract\s+)?class\b"
            r"|(?:export\s+)?(?:declare\s+)?(?:interface|type|enum|namespace)\s+[\w$]"
            r"|(?:export\s+)?(?:const|let|var)\s+[\w$]+\s*(?::[^=]+)?=\s*(?:async\s*)?(?:function\b|\(|[\w$]+\s*=>)"
            r"|export\b"
        ),
        re.compile(
            r"(?: {2,4}|\t)(?!(?:if|for|while|switch|catch|return|function|else|do|try|with)\b)"
            r"(?:(?:public|private|protected|static|readonly|async|override|abstract|get|set)\s+)*"
            r"[#\w$]+\s*(?:<[^>]*>)?\([^;]*\)\s*(?::\s*[^;{]+)?\{\s*$"
        ),
        (*_C_COMMENTS, "@"),
    ),
    "go": _Rules(re.compile(r"(?:func|type)\b|(?:var|const)\s*\("), None, ("//",)),
    "rust": _Rules(
        re.compile(
            r"(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|const|unsafe|default|extern(?:\s+\"[^\"]*\")?)\s+)*"
            r"(?:fn|impl|struct|enum|trait|mod|union|type)\b|macro_rules!"
        ),
        re.compile(
            r"(?: {4}|\t)(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|const|unsafe|default|extern(?:\s+\"[^\"]*\")?)\s+)*fn\b"
        ),
        ("//", "#["),
    ),
    "java": _Rules(
        re.compile(
            r"(?: {0,4}|\t)" + _JAVA_MODIFIERS + r"(?:class|interface|enum|record|@interface)\s+\w"
            r"|(?: {4}|\t)(?!(?:if|for|while|switch|catch|return|new|else|try|do|throw|synchronized)\b)"
            + _JAVA_MODIFIERS
            + r"(?:(?:synchronized|native|default)\s+)*(?:<[^>]+>\s+)?(?:[\w<>\[\],.?]+\s+)?\w+\s*\([^;]*$"
        ),
        None,
        (*_C_COMMENTS, "@"),
    ),
}
_RULES["typescript"] = _RULES["javascript"]


def chunk_lines(lines: Sequence[str], language: str) -> list[LineRange]:
    """Citeable ranges partitioning ``lines`` (each keeping its terminator), in order."""
    if not lines:
        return []
    sizes = [len(line) if line.isascii() else len(line.encode("utf-8")) for line in lines]
    offsets = [0]
    for size in sizes:
        offsets.append(offsets[-1] + size)

    def fits(start: int, end: int, max_lines: int = MAX_CHUNK_LINES) -> bool:
        return end - start <= max_lines and offsets[end] - offsets[start] <= MAX_CHUNK_BYTES

    rules = _RULES.get(language)
    if rules is None:
        pieces = _windows(0, len(lines), offsets)
    else:
        primary = _primary_starts(lines, rules, language)
        pieces = []
        for start, end in _segments(primary, len(lines)):
            if fits(start, end):
                pieces.append((start, end))
            else:
                pieces.extend(_split_large(lines, start, end, rules, offsets, fits))
    return [LineRange(s + 1, e) for s, e in _merge_tiny(pieces, fits)]


def _indent_free(line: str) -> bool:
    return bool(line) and not line[0].isspace()


def _primary_starts(lines: Sequence[str], rules: _Rules, language: str) -> list[int]:
    if language == "python":
        return _python_starts(lines)
    starts: list[int] = []
    for i, line in enumerate(lines):
        # Java members sit at indentation 4; the other languages' top level is column 0.
        if (language == "java" or _indent_free(line)) and rules.primary.match(line):
            starts.append(_pull_up(lines, i, starts[-1] + 1 if starts else 0, rules.attached))
    return starts


def _python_starts(lines: Sequence[str]) -> list[int]:
    """Column-0 ``def``/``class``; a decorator run (even a multi-line call) starts its definition."""
    starts: list[int] = []
    decorating = False
    primary = _RULES["python"].primary
    for i, line in enumerate(lines):
        # Indented lines, comments and closing brackets continue whatever came before (a decorator call).
        if not _indent_free(line) or line.startswith(("#", ")", "]", "}")):
            continue
        if line.startswith("@"):
            if not decorating:
                starts.append(_pull_up(lines, i, starts[-1] + 1 if starts else 0, ("#",)))
                decorating = True
        elif primary.match(line):
            if not decorating:
                starts.append(_pull_up(lines, i, starts[-1] + 1 if starts else 0, ("#",)))
            decorating = False
        else:
            decorating = False
    return starts


def _pull_up(lines: Sequence[str], index: int, floor: int, attached: tuple[str, ...]) -> int:
    """Move a start up over the comment/decorator lines directly above it (no blank line between)."""
    while index > floor:
        above = lines[index - 1].strip()
        if not above or not above.startswith(attached):
            break
        index -= 1
    return index


def _segments(starts: Sequence[int], total: int) -> list[tuple[int, int]]:
    bounds = sorted({0, *starts})
    return [(a, b) for a, b in zip(bounds, [*bounds[1:], total], strict=True) if a < b]


def _split_large(
    lines: Sequence[str],
    start: int,
    end: int,
    rules: _Rules,
    offsets: Sequence[int],
    fits: Callable[..., bool],
) -> list[tuple[int, int]]:
    """An oversized unit: member boundaries first, packed up to a window; windows for what is still too big."""
    subs: list[int] = []
    if rules.secondary is not None:
        for i in range(start + 1, end):
            if rules.secondary.match(lines[i]):
                subs.append(_pull_up(lines, i, subs[-1] + 1 if subs else start + 1, rules.attached))
    out: list[tuple[int, int]] = []
    for a, b in _segments([start, *subs], end):
        if a < start:
            continue
        if out and fits(out[-1][0], b, WINDOW_LINES):
            out[-1] = (out[-1][0], b)
        elif fits(a, b):
            out.append((a, b))
        else:
            out.extend(_windows(a, b, offsets))
    return out


def _windows(start: int, end: int, offsets: Sequence[int]) -> list[tuple[int, int]]:
    """Consecutive windows of up to ``WINDOW_LINES`` lines and ``MAX_CHUNK_BYTES`` (at least one line each)."""
    out = []
    a = start
    while a < end:
        b = a + 1
        while b < end and b - a < WINDOW_LINES and offsets[b + 1] - offsets[a] <= MAX_CHUNK_BYTES:
            b += 1
        out.append((a, b))
        a = b
    return out


def _merge_tiny(pieces: Sequence[tuple[int, int]], fits: Callable[..., bool]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in pieces:
        if out:
            prev_start, prev_end = out[-1]
            tiny = prev_end - prev_start < MIN_CHUNK_LINES or end - start < MIN_CHUNK_LINES
            if tiny and fits(prev_start, end, WINDOW_LINES):
                out[-1] = (prev_start, end)
                continue
        out.append((start, end))
    return out
