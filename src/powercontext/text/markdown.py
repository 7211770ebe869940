"""Which lines of a user's text are prose and which are a fenced code block, as Markdown reads fences.

A fence opens on a line whose first non-blank characters are three or more backticks or tildes (the rest of the
line is an info string such as ``python``; after backticks it may hold no backtick, so ```` ```x``` ```` is inline
code, not a fence). It closes on a line holding only the same character, at least as many times, and blanks. A
fence never closed runs to the end of the text. The recall query (``hosts.query``) and the explicit statements
(``sources.explicit``) both read prose only.
"""

from __future__ import annotations

import re

_OPENING = re.compile(r"[ \t]*(`{3,}(?=[^`]*$)|~{3,})")


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(fence) and stripped == fence[0] * len(stripped)


def prose_lines(text: str) -> list[str]:
    """The lines of ``text`` outside fenced code blocks, in order (the fence lines are part of their block)."""
    prose: list[str] = []
    fence = ""
    for line in text.splitlines():
        if fence:
            if _closes(line, fence):
                fence = ""
            continue
        opening = _OPENING.match(line)
        if opening is not None:
            fence = opening.group(1)
            continue
        prose.append(line)
    return prose
