"""The committed conversational suite is what ``tools/conversation_suite.py`` writes, and is well formed.

The generator is the suite's source of truth: a hand edit of the JSON Lines, or a change to the generator that
was not followed by a regeneration, fails here (regenerate with ``python tools/conversation_suite.py``).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from powercontext.evaluation.suite import Suite, load_suite

ROOT = Path(__file__).resolve().parents[2]
SUITE_DIR = ROOT / "examples" / "eval" / "conversations"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("conversation_suite", ROOT / "tools" / "conversation_suite.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite(SUITE_DIR)


def test_the_generator_reproduces_the_committed_suite_byte_for_byte(tmp_path: Path) -> None:
    _generator().write(tmp_path)
    for name in ("memories.jsonl", "queries.jsonl"):
        assert (tmp_path / name).read_bytes() == (SUITE_DIR / name).read_bytes(), f"{name} differs: regenerate it"


def test_another_seed_writes_another_suite(tmp_path: Path) -> None:
    _generator().write(tmp_path, seed=39)
    assert (tmp_path / "queries.jsonl").read_bytes() != (SUITE_DIR / "queries.jsonl").read_bytes()


def test_the_suite_has_the_four_categories_and_at_least_300_questions(suite: Suite) -> None:
    counts = Counter(q.category for q in suite.queries)
    assert set(counts) == {"single-hop", "multi-hop", "temporal", "abstain"}
    assert len(suite.queries) >= 300 and min(counts.values()) >= 30
    assert len(suite.scope_ids) >= 10  # one Scope per conversation


def test_answers_are_one_or_a_few_dated_turns_of_the_questions_conversation(suite: Suite) -> None:
    memories = {m.id: m for m in suite.memories}
    for q in suite.queries:
        if q.category == "abstain":
            assert q.expected == () and q.outdated == ()
            continue
        assert 1 <= len(q.expected) <= 3
        assert all(memories[i].scope_id == q.scope_id and memories[i].created for i in q.expected)
        if q.category == "multi-hop":
            assert len(q.expected) >= 2
        for old in q.outdated:  # a changed plan: the outdated turn was said before the current one
            assert memories[old].created < memories[q.expected[0]].created


def test_every_conversation_has_several_sessions_and_speakers(suite: Suite) -> None:
    for scope in suite.scope_ids:
        turns = [m for m in suite.memories if m.scope_id == scope]
        speakers = {m.text.split(":", 1)[0] for m in turns}
        assert len({m.created for m in turns}) >= 8 and 2 <= len(speakers) <= 4


def test_the_person_asked_about_is_named_in_many_other_turns(suite: Suite) -> None:
    """Names are no shortcut: whoever a question names speaks or is named in many turns of the chat."""
    by_scope: dict[str, list[str]] = {}
    for m in suite.memories:
        by_scope.setdefault(m.scope_id, []).append(m.text)
    for q in suite.queries:
        turns = by_scope[q.scope_id]
        speakers = {t.split(":", 1)[0] for t in turns}
        asked = [s for s in speakers if re.search(rf"\b{s}\b", q.query)]
        assert len(asked) == 1, q.id
        assert sum(asked[0] in t for t in turns) >= 10, q.id
