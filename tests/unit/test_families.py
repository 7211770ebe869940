"""Pure rules of the families: rendering, lifecycle transitions, wire validation."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from powercontext.contract.families import (
    ArtifactView,
    Experience,
    ExperienceReview,
    Profile,
    ProfileCommit,
    ReviseDecision,
    TopicMemory,
    TopicMemoryCreate,
    TopicMemoryRevise,
)
from powercontext.contract.memory import AtomicMemory
from powercontext.contract.prompts import PromptArtifact
from powercontext.domain.families import FamilyTransitionRefused, family_next_state
from powercontext.domain.identity import ArtifactKey
from powercontext.store.base import ExperienceContent, ExperienceRecord, ProfileEntry, ProfileRecord, TopicRecord


def key(family: Any, artifact_id: str = "x") -> ArtifactKey:
    return ArtifactKey("s", family, artifact_id, 1)


def test_render_text_of_each_family() -> None:
    topic = TopicRecord(key("topic-memory"), 1, "active", "Deploys", "Blue-green.\nOn Tuesdays.", (), "t")
    assert topic.render_text() == "Deploys\n\nBlue-green.\nOn Tuesdays."
    lesson = ExperienceContent("Flaky tests", "Pin the seed", "Sleeping")
    experience = ExperienceRecord(key("experience"), 1, "active", lesson, (), "t", "exc_1")
    assert experience.render_text() == "Situation: Flaky tests\nWhat worked: Pin the seed\nWhat to avoid: Sleeping"
    entries = (ProfileEntry("language", "Python"), ProfileEntry("style", "ruff\nmypy --strict"))
    profile = ProfileRecord(key("profile", "profile"), 1, entries, "t")
    assert profile.render_text() == "language: Python\nstyle: ruff\n  mypy --strict"


@pytest.mark.parametrize(
    ("family", "action", "state", "after"),
    [
        ("topic-memory", "retire", "active", "retired"),
        ("topic-memory", "restore", "retired", "active"),
        ("experience", "retire", "active", "retired"),
        ("topic-memory", "retire", "retired", None),
        ("topic-memory", "restore", "active", None),
        ("experience", "restore", "retired", None),
        ("experience", "retire", "retired", None),
        ("profile", "retire", "active", None),
    ],
)
def test_lifecycle_rules(family: Any, action: str, state: Any, after: str | None) -> None:
    if after is None:
        with pytest.raises(FamilyTransitionRefused):
            family_next_state(family, action, state)
    else:
        assert family_next_state(family, action, state) == after


def test_wire_validation_rules() -> None:
    with pytest.raises(ValidationError, match="at least one"):
        TopicMemoryRevise(expected_revision=1)
    with pytest.raises(ValidationError, match="go together"):
        ReviseDecision.model_validate(
            {
                "decision": "revise",
                "expected_candidate_revision": 1,
                "situation": "s",
                "what_worked": "w",
                "what_to_avoid": "a",
                "expected_revision": 1,
            }
        )
    with pytest.raises(ValidationError, match="only once"):
        ProfileCommit.model_validate({"entries": [{"key": "k", "value": "1"}, {"key": "k", "value": "2"}]})
    for revision in (True, False, -1, 2**31):
        with pytest.raises(ValidationError):
            ProfileCommit.model_validate({"entries": [{"key": "k", "value": "v"}], "expected_revision": revision})
    with pytest.raises(ValidationError):
        TopicMemoryCreate.model_validate({"title": "tab\there", "body": "b"})
    review = TypeAdapter(ExperienceReview)
    assert review.validate_python({"decision": "approve"}).decision == "approve"
    with pytest.raises(ValidationError):
        review.validate_python({"decision": "approve", "reason": "x"})


def _address(family: str, artifact_id: str) -> dict[str, Any]:
    return {"scope_id": "s", "artifact": {"family": family, "artifact_id": artifact_id, "revision": 1}}


def test_artifact_view_tells_families_apart_by_the_address() -> None:
    view = TypeAdapter(ArtifactView)
    common = {"head_revision": 1, "created_at": "t"}
    samples: list[tuple[dict[str, Any], type]] = [
        (
            {**common, "artifact_address": _address("atomic-memory", "am_1"), "state": "active", "kind": "fact",
             "text": "t", "tags": [], "merged_into": None, "merged_from": [], "observed_at": "t"},
            AtomicMemory,
        ),
        (
            {**common, "artifact_address": _address("topic-memory", "tm_1"), "state": "active", "title": "t",
             "body": "b", "tags": []},
            TopicMemory,
        ),
        (
            {**common, "artifact_address": _address("experience", "ex_1"), "state": "active", "situation": "s",
             "what_worked": "w", "what_to_avoid": "a", "tags": [], "candidate_id": "exc_1"},
            Experience,
        ),
        ({**common, "artifact_address": _address("profile", "profile"), "entries": []}, Profile),
        (
            {**common, "artifact_address": _address("prompt", "memory.rerank"), "state": "active",
             "schema_version": "powercontext.prompt.v1", "mode": "auto", "instructions": "", "demonstrations": []},
            PromptArtifact,
        ),
    ]  # fmt: skip
    for data, model in samples:
        assert type(view.validate_python(data)) is model
    schema = view.json_schema()
    assert len(schema["oneOf"]) == 5
