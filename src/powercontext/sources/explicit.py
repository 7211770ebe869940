"""The extractor used without a model: only explicit statements become Atomic Memories.

An explicit statement is a line of a user's ``prompt`` or ``note`` Source that says itself it is to be kept:
``remember: …`` / ``remember that …``, ``note: …``, ``from now on …``, ``we decided …``, or an instruction
opening with ``never …`` / ``always …`` (docs/sources.md, "Extraction", states the rules this module applies).
Anything else stays a pending Source until a model is configured; an agent's ``reply`` is never read as a user's
statement. Each statement is created as a new memory: deciding that it revises an older one takes a model (the
create answer's supersession rule still ranks the newer one first).

An active memory is injected into every later prompt, so a line only counts when it plainly is a statement:
code (fenced, or indented four spaces) and quoted lines (``>``) are someone else's words; the opening word must
stand alone (``Always-on`` is not ``always``); something must follow it; a question is not a statement; and
``never``/``always`` must be followed by what can start an instruction, not a function word (``never gonna``,
``always the same``) or the interjection ``never mind``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from powercontext.store.source_records import CreateMemory, SourceOperation, SourceRecord
from powercontext.text.markdown import prose_lines

USER_KINDS = frozenset({"prompt", "note"})
MAX_STATEMENT_BYTES = 8000  # an Atomic Memory's body limit

_DIRECTIVE = re.compile(r"(never|always)(?=\s)", re.IGNORECASE)
# (opening, kind, whether the stored text keeps the opening). Each opening ends where its statement starts: at a
# colon, or before the blank that ends its last word. "remember:"/"note:" are instructions to us, not content;
# "never"/"always"/"we decided"/"from now on" are part of what the user said ("never push" is not "push").
_RULES: tuple[tuple[re.Pattern[str], str, bool], ...] = (
    (re.compile(r"(?:please\s+)?remember(?:\s*:|\s+that(?=\s))", re.IGNORECASE), "fact", False),
    (re.compile(r"note\s*:", re.IGNORECASE), "note", False),
    (re.compile(r"from\s+now\s+on(?:\s*[,:]|(?=\s))", re.IGNORECASE), "constraint", True),
    (re.compile(r"we(?:'ve|\u2019ve|\s+have)?\s+decided(?:\s*:|(?=\s))", re.IGNORECASE), "decision", True),
    (_DIRECTIVE, "constraint", True),
)
_LIST_MARKER = re.compile(r"(?:[-*+\u2022]|\d{1,9}[.)])\s+")
_QUESTION_MARKS = ("?", "\uff1f")
# Words that cannot start an instruction after "never"/"always" (docs/sources.md, "Extraction").
_NOT_AN_INSTRUCTION = frozenset(
    word
    for words in (
        "i me my you your he him his she her it its we us our they them their this that these those",  # pronouns
        "a an the any some every each no",  # articles and determiners
        "am is are was were been being has had does did done",  # auxiliaries, not in their base form
        "can could will would shall should may might must",  # modals
        "gonna gotta wanna ain't isn't wasn't",  # contractions
        "seen heard thought knew known got gotten went gone said told",  # past forms
        "again before",  # "never again", "never before": an answer, not an instruction
    )
    for word in words.split()
)


@dataclass(frozen=True, slots=True)
class Statement:
    text: str
    kind: str


def _is_code_or_quote(raw: str) -> bool:
    """An indented code line (four spaces or a tab, and not a list item) or a quoted line (``>``)."""
    body = raw.lstrip(" \t")
    if body.startswith(">"):
        return True
    indent = raw[: len(raw) - len(body)].expandtabs(4)
    return len(indent) >= 4 and _LIST_MARKER.match(body) is None


def _instruction_follows(trigger: str, rest: str) -> bool:
    """Whether ``rest`` can be what ``never``/``always`` instructs (its first word is not a function word)."""
    first = rest.split(maxsplit=1)[0].strip(".,;:!\"'()*_").casefold()
    if trigger.casefold() == "never" and first == "mind":
        return False
    return first not in _NOT_AN_INSTRUCTION


def statement(line: str) -> Statement | None:
    """The explicit statement ``line`` makes, or None (the line is one line of prose, code and quotes excluded)."""
    line = _LIST_MARKER.sub("", line.strip(), count=1)
    for pattern, kind, keep_opening in _RULES:
        opening = pattern.match(line)
        if opening is None:
            continue
        rest = line[opening.end() :].strip()
        if not any(c.isalnum() for c in rest) or rest.endswith(_QUESTION_MARKS):
            return None
        if pattern is _DIRECTIVE and not _instruction_follows(opening.group(1), rest):
            return None
        return Statement(line if keep_opening else rest, kind)
    return None


def statements(content: str) -> list[Statement]:
    """The explicit statements of ``content``, one per prose line that makes one, in order, once each."""
    found: list[Statement] = []
    seen: set[str] = set()
    for raw in prose_lines(content):
        if _is_code_or_quote(raw):
            continue
        made = statement(raw)
        if made is None or len(made.text.encode("utf-8")) > MAX_STATEMENT_BYTES:
            continue
        if made.text.casefold() not in seen:
            seen.add(made.text.casefold())
            found.append(made)
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
