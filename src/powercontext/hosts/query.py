"""A bounded recall query from a user's prompt.

An agent prompt can run to thousands of characters of pasted code, logs and boilerplate; recall needs
the question. The rule, applied in order:

1. Remove fenced code blocks (```` ``` ```` or ``~~~`` fences, contents included; ``text.markdown`` says what
   a fence is). If nothing but whitespace remains, keep the original prompt instead.
2. Collapse every run of whitespace to one space and strip the ends.
3. If at most ``MAX_QUERY_CHARS`` (1,000) characters remain, that is the query.
4. Otherwise keep the first 500 and the last 500 characters, each cut back to a word boundary, joined by
   one space: the ask is usually stated at the start or at the end of a long prompt.

An empty result means "no query": the hook skips recall.
"""

from __future__ import annotations

import re

from powercontext.text.markdown import prose_lines

MAX_QUERY_CHARS = 1000
_HALF = MAX_QUERY_CHARS // 2
_SPACE = re.compile(r"\s+")


def derive_query(prompt: str) -> str:
    """The query for ``prompt`` (at most ``MAX_QUERY_CHARS`` characters; ``""`` when there is nothing to ask)."""
    prose = "\n".join(prose_lines(prompt))
    if not prose.strip():
        prose = prompt
    text = _SPACE.sub(" ", prose).strip()
    if len(text) <= MAX_QUERY_CHARS:
        return text
    head = text[:_HALF]
    if text[_HALF] != " " and " " in head:
        head = head[: head.rindex(" ")]
    tail = text[-_HALF:]
    if text[-_HALF - 1] != " " and " " in tail:
        tail = tail[tail.index(" ") + 1 :]
    return f"{head.strip()} {tail.strip()}"
