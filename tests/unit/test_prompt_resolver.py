"""``ScopePromptResolver`` and the Prompt content rules, over a real SQLite store.

Expected texts and digests are built here from the documented layout (invariants, blank line, guidance,
then ``Examples:`` with canonical JSON) and hashed with hashlib, not by calling the compiler under test.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from powercontext.prompts import (
    BUILTIN_DEFINITIONS,
    PromptContentInvalid,
    PromptUnavailable,
    ScopePromptResolver,
    UnknownPromptKey,
    prompt_resolver_for,
    resolve_builtin,
)
from powercontext.prompts.content import normalize, validate
from powercontext.store.base import PromptContent, PromptDemonstration
from powercontext.store.sqlite import SqliteStore

RERANK = BUILTIN_DEFINITIONS["memory.rerank"]
EXPAND = BUILTIN_DEFINITIONS["recall.expand"]


def canonical(value: object) -> str:
    # Enough of RFC 8785 for the ASCII and BMP values used here: sorted keys, no spaces, no escaping of non-ASCII.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest_of(key: str, version: int, text: str) -> str:
    record = {"compiled_text": text, "definition_version": version, "key": key}
    return "sha256:" + hashlib.sha256(canonical(record).encode("utf-8")).hexdigest()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteStore]:
    s = SqliteStore(tmp_path / "prompts.db")
    yield s
    s.close()


def new_scope(store: SqliteStore, name: str = "proj") -> str:
    store.create_scope(name, "t", [])
    return name


def custom(text: str, *demos: PromptDemonstration) -> PromptContent:
    return PromptContent("custom", text, demos)


def test_without_a_head_or_with_an_auto_or_retired_head_the_builtin_is_resolved(store: SqliteStore) -> None:
    sid = new_scope(store)
    resolver = ScopePromptResolver(store)
    builtin = resolve_builtin(sid, "memory.rerank")
    assert resolver(sid, "memory.rerank") == builtin
    assert builtin.selection == "built_in" and builtin.artifact_address is None
    store.commit_prompt(sid, "memory.rerank", 0, PromptContent("auto", "", ()))
    assert resolver.resolve(sid, "memory.rerank") == builtin
    store.commit_prompt(sid, "memory.rerank", 1, custom("Prefer constraints."))
    assert resolver(sid, "memory.rerank").selection == "artifact"
    store.change_prompt_lifecycle(sid, "memory.rerank", "retire", 2)
    assert resolver(sid, "memory.rerank") == builtin
    assert resolver("no-such-scope", "recall.expand") == resolve_builtin("no-such-scope", "recall.expand")


def test_a_custom_head_compiles_invariants_instructions_and_demonstrations_in_order(store: SqliteStore) -> None:
    sid = new_scope(store)
    demo = PromptDemonstration({"request": "why é?", "candidates": ["one", "two"]}, {"ranks": [2]})
    store.commit_prompt(sid, "memory.rerank", 0, custom("Prefer constraints over facts.", demo))
    resolved = ScopePromptResolver(store)(sid, "memory.rerank")

    expected_text = (
        RERANK.invariant_instructions
        + "\n\nPrefer constraints over facts.\n\nExamples:\n\n"
        + 'Input: {"candidates":["one","two"],"request":"why é?"}\nOutput: {"ranks":[2]}'
    )
    assert resolved.compiled_text == expected_text
    assert resolved.compiled_digest == digest_of("memory.rerank", RERANK.definition_version, expected_text)
    assert resolved.compiled_digest != resolve_builtin(sid, "memory.rerank").compiled_digest
    assert (resolved.selection, resolved.selected_version) == ("artifact", 1)
    assert (resolved.definition_version, resolved.builtin_version) == (1, 1)
    assert resolved.artifact_address is not None
    assert resolved.artifact_address.model_dump() == {
        "scope_id": sid,
        "artifact": {"family": "prompt", "artifact_id": "memory.rerank", "revision": 1},
    }


def test_each_revision_and_each_scope_resolves_separately(store: SqliteStore) -> None:
    a, b = new_scope(store, "a"), new_scope(store, "b")
    resolver = ScopePromptResolver(store)
    store.commit_prompt(a, "recall.expand", 0, custom("Use component names."))
    store.commit_prompt(b, "recall.expand", 0, custom("Use component names."))
    first_a, first_b = resolver(a, "recall.expand"), resolver(b, "recall.expand")
    assert first_a.compiled_digest == first_b.compiled_digest  # equal Prompts digest equally
    assert first_a.scope_id == a and first_b.scope_id == b
    assert first_a.artifact_address != first_b.artifact_address
    store.commit_prompt(a, "recall.expand", 1, custom("Use synonyms."))
    second_a = resolver(a, "recall.expand")
    assert second_a.selected_version == 2
    assert second_a.compiled_digest == digest_of(
        "recall.expand", 1, EXPAND.invariant_instructions + "\n\nUse synonyms."
    )
    assert resolver(b, "recall.expand") == first_b


def test_a_custom_head_that_no_longer_validates_is_unavailable_not_builtin(store: SqliteStore) -> None:
    sid = new_scope(store)
    # Written straight to the store, as an older definition (or another writer) might have left it.
    store.commit_prompt(sid, "recall.expand", 0, custom("ok", PromptDemonstration({"request": "q"}, {"ranks": [1]})))
    with pytest.raises(PromptUnavailable) as caught:
        ScopePromptResolver(store)(sid, "recall.expand")
    assert (caught.value.code, caught.value.status) == ("prompt-unavailable", 503)
    assert "invalid-prompt-demonstration" in str(caught.value)
    store.commit_prompt(sid, "recall.expand", 1, custom("   "))
    with pytest.raises(PromptUnavailable):
        ScopePromptResolver(store)(sid, "recall.expand")


def test_an_unreadable_store_is_unavailable_and_an_unknown_key_is_refused(tmp_path: Path) -> None:
    s = SqliteStore(tmp_path / "closed.db")
    resolver = ScopePromptResolver(s)
    with pytest.raises(UnknownPromptKey) as unknown:
        resolver("x", "memory.summarize")
    assert (unknown.value.code, unknown.value.status) == ("unknown-prompt-key", 404)
    s.close()
    with pytest.raises(PromptUnavailable):
        resolver("x", "memory.rerank")


def test_the_resolver_for_a_store_without_prompts_is_the_builtin(store: SqliteStore) -> None:
    assert prompt_resolver_for(object()) is resolve_builtin
    assert isinstance(prompt_resolver_for(store), ScopePromptResolver)


# -- content rules -----------------------------------------------------------------------------


def code_of(content: PromptContent, definition: object = RERANK) -> str:
    with pytest.raises(PromptContentInvalid) as caught:
        validate(definition, normalize(content))  # type: ignore[arg-type]
    assert caught.value.status == 422
    return caught.value.code


def rerank_demo(candidates: list[str], ranks: list[object]) -> PromptDemonstration:
    return PromptDemonstration({"request": "q", "candidates": candidates}, {"ranks": ranks})  # type: ignore[dict-item]


def test_instructions_are_trimmed_nfc_and_bounded() -> None:
    decomposed = "  Cafe\u0301 first\n"
    assert normalize(custom(decomposed)).instructions == unicodedata.normalize("NFC", decomposed).strip()
    validate(RERANK, normalize(custom("x" * 32_768 + "   ")))
    assert code_of(custom("x" * 32_769)) == "prompt-instructions-too-long"
    assert code_of(custom(" \n\t ")) == "prompt-instructions-required"
    assert code_of(PromptContent("auto", "keep", ())) == "prompt-auto-not-empty"
    assert code_of(PromptContent("auto", "", (rerank_demo(["a"], [1]),))) == "prompt-auto-not-empty"
    assert code_of(PromptContent("custom", "x", (), schema_version="powercontext.prompt.v2")) == (
        "unsupported-prompt-schema"
    )
    validate(RERANK, PromptContent("auto", "", ()))


def test_demonstrations_are_counted_sized_and_typed_per_key() -> None:
    fifty = tuple(rerank_demo(["a", "b"], [2, 1]) for _ in range(50))
    validate(RERANK, custom("x", *fifty))
    assert code_of(custom("x", *fifty, rerank_demo(["a"], [1]))) == "too-many-prompt-demonstrations"
    big = "y" * (64 * 1024)
    assert code_of(custom("x", rerank_demo([big], [1]))) == "prompt-demonstration-too-large"
    # Each under 64 KiB, together over 256 KiB.
    five = tuple(rerank_demo(["z" * 60_000], [1]) for _ in range(5))
    assert code_of(custom("x", *five)) == "prompt-too-large"
    for bad in (
        rerank_demo(["a", "b"], [3]),
        rerank_demo(["a", "b"], [1, 1]),
        rerank_demo(["a"], [True]),
        rerank_demo([], []),
        rerank_demo(["a", " "], [1]),
        PromptDemonstration({"request": "q"}, {"ranks": [1]}),
        PromptDemonstration({"request": "q", "candidates": ["a"], "extra": 1}, {"ranks": [1]}),
        PromptDemonstration({"request": "q", "candidates": ["a"]}, {"ranks": [2**60]}),
    ):
        assert code_of(custom("x", bad)) == "invalid-prompt-demonstration"
    validate(RERANK, custom("x", rerank_demo(["a", "b"], [])))  # an empty selection is a valid answer
    validate(EXPAND, custom("x", PromptDemonstration({"request": "q"}, {"queries": ["a", "b", "c"]})))
    too_many = PromptDemonstration({"request": "q"}, {"queries": ["a", "b", "c", "d"]})
    assert code_of(custom("x", too_many), EXPAND) == "invalid-prompt-demonstration"
    not_finite = PromptDemonstration({"request": "q"}, {"queries": ["a"], "score": float("nan")})
    assert code_of(custom("x", not_finite), EXPAND) == "invalid-prompt-demonstration"
