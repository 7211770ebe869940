"""The model's extraction answer: what ``parse_operations`` accepts as operations, and what it rejects whole."""

from __future__ import annotations

import json
from typing import Any

import pytest

from powercontext.domain.identity import ArtifactKey
from powercontext.inference.generation import InvalidOutput
from powercontext.sources.model import parse_operations
from powercontext.store.base import MemoryRecord
from powercontext.store.source_records import CreateMemory, ForgetMemory, MergeMemories, ReviseMemory


def _memory(artifact_id: str, revision: int, text: str) -> MemoryRecord:
    key = ArtifactKey("s", "atomic-memory", artifact_id, revision)
    return MemoryRecord(key, revision, "active", "fact", text, (), "2026-01-01T00:00:00.000Z", None, ())


RELATED = [_memory("a", 3, "Deploys are on Tuesdays"), _memory("b", 1, "Deploys start at 10"), _memory("c", 2, "x")]


def _answer(*ops: dict[str, Any]) -> str:
    return json.dumps({"operations": list(ops)})


def test_a_merge_names_the_exact_revisions_of_the_listed_memories() -> None:
    ops = parse_operations(
        _answer(
            {"op": "merge", "memories": [2, 1], "text": " Deploys: Tuesdays at 10 ", "kind": "decision"},
            {"op": "revise", "memory": 3, "text": "y"},
            {"op": "create", "text": "z", "kind": "no-such-kind"},
        ),
        RELATED,
    )
    assert ops == [
        MergeMemories((("b", 1), ("a", 3)), "Deploys: Tuesdays at 10", "decision"),
        ReviseMemory("c", 2, "y"),
        CreateMemory("z", "fact"),
    ]


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "merge", "memories": [1], "text": "t"}],  # a merge of one is a revise
        [{"op": "merge", "memories": [1, 1], "text": "t"}],
        [{"op": "merge", "memories": [1, 4], "text": "t"}],  # 4 is not listed
        [{"op": "merge", "memories": [1, True], "text": "t"}],
        [{"op": "merge", "memories": "1,2", "text": "t"}],
        [{"op": "merge", "memories": [1, 2]}],  # no text
        [{"op": "merge", "memories": [1, 2], "text": "t"}, {"op": "forget", "memory": 2}],  # one memory, two ops
        [{"op": "split", "memory": 1, "text": "t"}],
    ],
)
def test_an_answer_outside_the_contract_is_rejected_whole(ops: list[dict[str, Any]]) -> None:
    with pytest.raises(InvalidOutput):
        parse_operations(_answer(*ops), RELATED)


def test_forget_still_names_one_exact_revision() -> None:
    assert parse_operations(_answer({"op": "forget", "memory": 1}), RELATED) == [ForgetMemory("a", 3)]
