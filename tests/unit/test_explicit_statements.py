"""The explicit statements read without a model, line by line: what counts, what is stored, what never counts.

Every statement written here becomes an active memory injected into later prompts (``explicit: apply``), so the
lines that only look like statements (QA found each of the first group in a real prompt) must give nothing.
"""

from __future__ import annotations

import pytest

from powercontext.sources.explicit import statement, statements
from powercontext.text.markdown import prose_lines


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # Stored exactly as written after the marker (no re-capitalisation), the opening kept where it is meaning.
        ("remember: the settlement cutoff is 23:00 UTC", ("the settlement cutoff is 23:00 UTC", "fact")),
        ("remember: the deploy window is Tuesday", ("the deploy window is Tuesday", "fact")),
        ("Please remember that staging is pg-2", ("staging is pg-2", "fact")),
        ("Remember:   trailing spaces go  ", ("trailing spaces go", "fact")),
        ("note: the vendor SLA is 4h", ("the vendor SLA is 4h", "note")),
        ("- note: staging is pg-2", ("staging is pg-2", "note")),
        ("from now on, lint with ruff", ("from now on, lint with ruff", "constraint")),
        ("From now on: squash merges only", ("From now on: squash merges only", "constraint")),
        ("we decided to use Postgres", ("we decided to use Postgres", "decision")),
        ("We've decided: uv replaces pip", ("We've decided: uv replaces pip", "decision")),
        ("1. we have decided that Fridays are frozen", ("we have decided that Fridays are frozen", "decision")),
        ("never commit secrets to the repo", ("never commit secrets to the repo", "constraint")),
        ("always run the migrations before deploy", ("always run the migrations before deploy", "constraint")),
        ("* Always use UTC in logs.", ("Always use UTC in logs.", "constraint")),
        ("never ever push to main", ("never ever push to main", "constraint")),
        ("  - never push to main", ("never push to main", "constraint")),  # a nested list item, not code
        # The QA lines: an idiom, a hyphenated word, questions, a bare opening.
        ("never mind, ignore my last message", None),
        ("Always-on feature flags are confusing?", None),
        ("Always-on feature flags are confusing", None),
        ("we decided?", None),
        ("Never gonna give you up", None),
        # A bare opening, or nothing but punctuation after it.
        ("remember:", None),
        ("remember: ...", None),
        ("note:", None),
        ("we decided.", None),
        ("never", None),
        ("always!", None),
        ("from now on", None),
        # Questions are never statements.
        ("remember: is the cutoff 23:00 UTC?", None),
        ("we decided to use Postgres?", None),
        ("never push on Fridays?", None),
        ("from now on can you lint with ruff?", None),
        # The opening must be a whole word, at the start.
        ("remembered: nothing", None),
        ("notes: a b c", None),
        ("from now onwards lint with ruff", None),
        ("we decidedly prefer tabs", None),
        ("nevertheless it works", None),
        ("I always forget; remember me?", None),
        # After never/always, a function word is not an instruction.
        ("always the same error when I run tests", None),
        ("never been this fast before", None),
        ("Never again.", None),
        ("always was flaky on CI", None),
        ("never seen this error before", None),
    ],
)
def test_one_line(line: str, expected: tuple[str, str] | None) -> None:
    made = statement(line)
    assert (None if made is None else (made.text, made.kind)) == expected


def test_code_and_quotes_are_never_statements() -> None:
    content = (
        "> note: quoted from the old wiki\n"
        "- > remember: a quote in a list\n"
        "```\nNever gonna give you up\nremember: this is inside a code block\n```\n"
        "~~~python title=x\nalways return early\n~~~~\n"
        "    never_push(main)  # an indented code line\n"
        "\tremember: a tab-indented line is code too\n"
        "````md\nnote: a longer fence\n```\nstill inside: a closer must be at least as long\n````\n"
        "we decided to keep this one\n"
        "```unclosed\nremember: an unclosed fence runs to the end\n"
    )
    assert [(s.text, s.kind) for s in statements(content)] == [("we decided to keep this one", "decision")]


def test_statements_keep_order_and_drop_repeats_ignoring_case() -> None:
    found = statements("remember: deploys are on Tuesdays\nnever push to main\nRemember: Deploys are on Tuesdays")
    assert [s.text for s in found] == ["deploys are on Tuesdays", "never push to main"]


def test_inline_triple_backticks_do_not_open_a_fence() -> None:
    assert prose_lines("use ```x``` here\nnote: still prose\n~~~\ncode\n~~~\nafter") == [
        "use ```x``` here",
        "note: still prose",
        "after",
    ]
