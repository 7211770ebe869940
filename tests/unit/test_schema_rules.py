"""The published schema and the Server's validators agree on the cross-field rules: each example is accepted by
both or refused by both (JSON Schema 2020-12 as a client's validator reads the model's schema)."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, ValidationError

from powercontext.contract.families import ExperienceCandidateCreate, TopicMemoryRevise
from powercontext.contract.prepare import PrepareContextRequest

LESSON = {"situation": "s", "what_worked": "w", "what_to_avoid": "a"}
PREPARE = {"scope_id": "s", "query": "q"}


def sections(*pairs: tuple[str, int]) -> dict[str, Any]:
    return {**PREPARE, "assembly": {"sections": [{"family": f, "limit": n} for f, n in pairs]}}


CASES: list[tuple[type[BaseModel], dict[str, Any], bool]] = [
    (TopicMemoryRevise, {"expected_revision": 1}, False),
    (TopicMemoryRevise, {"expected_revision": 1, "title": None, "tags": None}, False),
    (TopicMemoryRevise, {"expected_revision": 1, "title": "t"}, True),
    (TopicMemoryRevise, {"expected_revision": 1, "tags": []}, True),
    (TopicMemoryRevise, {"expected_revision": 2.0, "body": "b"}, True),  # 2.0 is an integer to JSON Schema
    (TopicMemoryRevise, {"expected_revision": 2.5, "body": "b"}, False),
    (ExperienceCandidateCreate, LESSON, True),
    (ExperienceCandidateCreate, {**LESSON, "target_artifact_id": None, "expected_revision": None}, True),
    (ExperienceCandidateCreate, {**LESSON, "target_artifact_id": "e1", "expected_revision": 3}, True),
    (ExperienceCandidateCreate, {**LESSON, "target_artifact_id": "e1"}, False),
    (ExperienceCandidateCreate, {**LESSON, "target_artifact_id": "e1", "expected_revision": None}, False),
    (ExperienceCandidateCreate, {**LESSON, "expected_revision": 3}, False),
    (PrepareContextRequest, sections(("memory", 8), ("experience", 2), ("profile", 1)), True),
    (PrepareContextRequest, sections(("memory", 8), ("memory", 1)), False),
    (PrepareContextRequest, sections(("experience", 3)), False),
    (PrepareContextRequest, sections(("topic-memory", 3.0)), True),
    (PrepareContextRequest, {**PREPARE, "max_bytes": 1000.0}, True),
    (PrepareContextRequest, {**PREPARE, "max_bytes": "1000"}, False),
]


def server_accepts(model: type[BaseModel], body: dict[str, Any]) -> bool:
    try:
        model.model_validate(body)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize("model, body, accepted", CASES)
def test_the_schema_and_the_server_agree(model: type[BaseModel], body: dict[str, Any], accepted: bool) -> None:
    schema = model.model_json_schema()
    assert Draft202012Validator(schema).is_valid(body) is accepted
    assert server_accepts(model, body) is accepted
