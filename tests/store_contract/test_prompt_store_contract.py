"""The ``PromptStore`` contract, run against every backend in ``BACKENDS``."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Protocol

import pytest

from powercontext.store.base import PromptContent, PromptDemonstration, PromptStore, Store
from powercontext.store.errors import (
    ArtifactNotFound,
    NotActive,
    RevisionConflict,
    RevisionNotFound,
    ScopeNotFound,
)

KEY = "memory.rerank"


class Both(Store, PromptStore, Protocol):
    """For type checking only: a backend here implements both protocols."""


@pytest.fixture
def ps(store: Store) -> Both:
    assert isinstance(store, PromptStore), "every backend under contract implements PromptStore"
    return store  # type: ignore[return-value]


def scope(store: Store) -> str:
    scope_id = f"s-{uuid.uuid4().hex[:12]}"
    store.create_scope(scope_id, "title", [])
    return scope_id


def custom(instructions: str, *demos: PromptDemonstration) -> PromptContent:
    return PromptContent("custom", instructions, demos)


AUTO = PromptContent("auto", "", ())


def test_a_scope_without_a_prompt_has_no_head(ps: Both) -> None:
    sid = scope(ps)
    assert ps.read_prompt_head(sid, KEY) is None
    assert ps.read_prompt_head("no-such-scope", KEY) is None  # the prepare path does not check the Scope
    assert ps.list_prompt_heads(sid) == []
    with pytest.raises(ScopeNotFound):
        ps.list_prompt_heads("no-such-scope")
    with pytest.raises(ArtifactNotFound):
        ps.read_prompt_revision(sid, KEY, 1)


def test_commit_writes_numbered_revisions_and_keeps_content_exactly(ps: Both) -> None:
    sid = scope(ps)
    demo = PromptDemonstration({"request": "why sqlite?", "candidates": ["a", "b"]}, {"ranks": [2, 1]})
    first = ps.commit_prompt(sid, KEY, 0, custom("Prefer decisions. é ☃", demo))
    assert (first.key.scope_id, first.key.family, first.key.artifact_id, first.key.revision) == (
        sid,
        "prompt",
        KEY,
        1,
    )
    assert (first.head_revision, first.state) == (1, "active")
    second = ps.commit_prompt(sid, KEY, 1, AUTO)
    assert (second.key.revision, second.head_revision, second.content.mode) == (2, 2, "auto")

    head = ps.read_prompt_head(sid, KEY)
    assert head is not None and head.key.revision == 2 and head.content == AUTO
    old = ps.read_prompt_revision(sid, KEY, 1)
    assert old.head_revision == 2  # the exact revision carries the current head
    assert old.content == custom("Prefer decisions. é ☃", demo)
    assert old.content.schema_version == "powercontext.prompt.v1"
    assert old.content.demonstrations[0].input == {"request": "why sqlite?", "candidates": ["a", "b"]}
    with pytest.raises(RevisionNotFound):
        ps.read_prompt_revision(sid, KEY, 3)


def test_commit_is_compare_and_set_on_the_head(ps: Both) -> None:
    sid = scope(ps)
    with pytest.raises(RevisionConflict):
        ps.commit_prompt(sid, KEY, 1, custom("x"))  # nothing there yet: expected must be 0
    ps.commit_prompt(sid, KEY, 0, custom("x"))
    with pytest.raises(RevisionConflict) as caught:
        ps.commit_prompt(sid, KEY, 0, custom("y"))
    assert caught.value.current == 1
    head = ps.read_prompt_head(sid, KEY)
    assert head is not None and head.content.instructions == "x"
    with pytest.raises(ScopeNotFound):
        ps.commit_prompt("no-such-scope", KEY, 0, custom("x"))


def test_concurrent_commits_on_the_same_head_let_exactly_one_win(ps: Both) -> None:
    sid = scope(ps)
    ps.commit_prompt(sid, KEY, 0, custom("base"))
    results: list[str] = []
    lock = threading.Lock()

    def attempt(i: int) -> None:
        try:
            ps.commit_prompt(sid, KEY, 1, custom(f"writer {i}"))
            outcome = "won"
        except RevisionConflict:
            outcome = "conflict"
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["conflict"] * 5 + ["won"]
    head = ps.read_prompt_head(sid, KEY)
    assert head is not None and head.head_revision == 2


def test_keys_and_scopes_are_separate_artifacts(ps: Both) -> None:
    a, b = scope(ps), scope(ps)
    ps.commit_prompt(a, KEY, 0, custom("in a"))
    ps.commit_prompt(a, "recall.expand", 0, custom("expand in a"))
    ps.commit_prompt(b, KEY, 0, custom("in b"))
    heads = ps.list_prompt_heads(a)
    assert [h.key.artifact_id for h in heads] == ["memory.rerank", "recall.expand"]
    assert [h.content.instructions for h in heads] == ["in a", "expand in a"]
    head_b = ps.read_prompt_head(b, KEY)
    assert head_b is not None and head_b.content.instructions == "in b" and head_b.key.revision == 1


def test_retire_keeps_every_revision_readable_and_a_commit_reactivates(ps: Both) -> None:
    sid = scope(ps)
    ps.commit_prompt(sid, KEY, 0, custom("one"))
    ps.commit_prompt(sid, KEY, 1, custom("two"))
    with pytest.raises(RevisionConflict):
        ps.change_prompt_lifecycle(sid, KEY, "retire", 1)
    retired = ps.change_prompt_lifecycle(sid, KEY, "retire", 2)
    assert (retired.state, retired.head_revision) == ("retired", 2)
    head = ps.read_prompt_head(sid, KEY)
    assert head is not None and head.state == "retired"
    assert [h.state for h in ps.list_prompt_heads(sid)] == ["retired"]
    assert ps.read_prompt_revision(sid, KEY, 1).content.instructions == "one"
    assert ps.read_prompt_revision(sid, KEY, 2).state == "retired"
    with pytest.raises(NotActive):
        ps.change_prompt_lifecycle(sid, KEY, "retire", None)

    again = ps.commit_prompt(sid, KEY, 2, custom("three"))
    assert (again.key.revision, again.state) == (3, "active")
    with pytest.raises(ArtifactNotFound):
        ps.change_prompt_lifecycle(sid, "recall.expand", "retire", None)
    with pytest.raises(ScopeNotFound):
        ps.change_prompt_lifecycle("no-such-scope", KEY, "retire", None)


def test_prompts_survive_reopening(open_store: Callable[[], Store]) -> None:
    first = open_store()
    assert isinstance(first, PromptStore)
    sid = scope(first)
    first.commit_prompt(sid, KEY, 0, custom("durable", PromptDemonstration({"request": "q"}, {"queries": ["x"]})))
    first.close()
    second = open_store()
    assert isinstance(second, PromptStore)
    head = second.read_prompt_head(sid, KEY)
    assert head is not None
    assert head.content == custom("durable", PromptDemonstration({"request": "q"}, {"queries": ["x"]}))


def test_prompt_artifacts_are_not_memories(ps: Both) -> None:
    sid = scope(ps)
    ps.commit_prompt(sid, KEY, 0, custom("searchword in a prompt"))
    assert ps.search_text(sid, ["searchword"], 10) == []
    with pytest.raises(ArtifactNotFound):
        ps.read_head(sid, KEY)
