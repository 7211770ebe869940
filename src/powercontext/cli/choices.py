"""Options that take one of a fixed set of words, checked before any request, with the nearest word offered.

A typo such as ``--kind decison`` is then refused at once (exit 2, as every usage error) with "did you mean
decision?", instead of travelling to the Server to be refused there. The word lists are the wire models'
``Literal`` types; they are written out here so that ``--help`` does not import pydantic
(tests/unit/test_cli_choices.py keeps the two equal).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence

MEMORY_KINDS = ("decision", "constraint", "fact", "state", "next-step", "outcome", "note")
SEARCH_MODES = ("auto", "fts", "vector", "hybrid")
LIST_STATES = ("active", "forgotten", "retired", "merged", "all")


def nearest_word(value: str, words: Sequence[str], cutoff: float = 0.5) -> str | None:
    """The word of ``words`` closest to ``value`` (a likely typo), or None when none is close."""
    near = difflib.get_close_matches(value, words, n=1, cutoff=cutoff)
    return near[0] if near else None


def one_of(words: tuple[str, ...]) -> Callable[[str], str]:
    """An option parser accepting one of ``words``; anything else is a usage error naming the nearest word."""

    def parse(value: str) -> str:
        import typer  # here, not at the top: the short route (``cli.quick``) reads the word lists without Typer

        if value in words:
            return value
        near = nearest_word(value, words)
        hint = f"; did you mean {near}?" if near else ""
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(words)}{hint}")

    return parse
