"""The extractor used without a model: only explicit statements become Atomic Memories.

An explicit statement is a line of a user's ``prompt`` or ``note`` Source that says itself it is to be kept:
``remember: …`` / ``remember that …``, ``note: …``, ``from now on …``, ``we decided …``, or a directive opening
with ``never …`` / ``always …``. Anything else stays a pending Source until a model is configured; an agent's
``reply`` is never read as a user's statement. Each statement is created as a new memory: deciding that it
revises an older one takes a model (the create answer's supersession rule still ranks the newer one first).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from powercontext.store.source_records import CreateMemory, SourceOperation, SourceRecord

USER_KINDS = frozenset({"prompt", "note"})
MAX_STATEMENT_BYTES = 8000  # an Atomic Memory's body limit

# (pattern, keep the matched lead-in, kind). The lead-in of "remember:"/"note:" is an instruction, not content.
_RULES: tuple[tuple[re.Pattern[str], bool, str], ...] = (
    (re.compile(r"^(?:please\s+)?remember(?:\s*:\s*|\s+that\s+)", re.IGNORECASE), False, "fact"),
    (re.compile(r"^note\s*:\s*", re.IGNORECASE), False, "note"),
    (re.compile(r"^from\s+now\s+on\b[,:]?\s*", re.IGNORECASE), True, "constraint"),
    (re.compile(r"^we(?:'ve|\s+have)?\s+decided\b", re.IGNORECASE), True, "decision"),
    (re.compile(r"^(?:never|always)\b", re.IGNORECASE), True, "constraint"),
)
_BULLET = re.compile(r"^\s*(?:[-*•>]\s+|\d+[.)]\s+)?")


@dataclass(frozen=True, slots=True)
class Statement:
    text: str
    kind: str


def statements(content: str) -> list[Statement]:
    """The explicit statements of ``content``, one per line that opens with a rule's words, in order, once each."""
    found: list[Statement] = []
    seen: set[str] = set()
    for raw in content.splitlines():
        line = _BULLET.sub("", raw, count=1).strip()
        for pattern, keep_lead, kind in _RULES:
            match = pattern.match(line)
            if match is None:
                continue
            text = line if keep_lead else line[match.end() :].strip()
            text = text[:1].upper() + text[1:]
            if text and text.casefold() not in seen and len(text.encode("utf-8")) <= MAX_STATEMENT_BYTES:
                seen.add(text.casefold())
                found.append(Statement(text, kind))
            break
    return found


class ExplicitExtractor:
    """``Extractor`` without a model (see the module)."""

    model_backed = False

    def operations(self, source: SourceRecord) -> list[SourceOperation] | None:
        """The memories to create, or None when nothing here is explicit (the Source waits for a model)."""
        if source.ref.kind not in USER_KINDS:
            return None
        found = statements(source.content)
        if not found:
            return None
        return [CreateMemory(s.text, s.kind) for s in found]
