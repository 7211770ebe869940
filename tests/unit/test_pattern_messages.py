"""Every pattern the API publishes is told in words when a value does not match it, and a validator's own
message is not prefixed with pydantic's "Value error, "."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
import yaml
from pydantic import AfterValidator, BaseModel, ValidationError

from powercontext.contract.common import PATTERN_MESSAGES
from powercontext.contract.families import utf8_bounded
from powercontext.contract.messages import describe_error
from powercontext.contract.scopes import ScopeCreate

SPEC = Path(__file__).resolve().parents[2] / "openapi" / "powercontext.yaml"


def _patterns(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["pattern"]} if isinstance(node.get("pattern"), str) else set()
        return found.union(*(_patterns(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_patterns(v) for v in node))
    return set()


def test_every_published_pattern_has_words() -> None:
    published = _patterns(yaml.safe_load(SPEC.read_text(encoding="utf-8")))
    assert published, "the spec names no pattern: the walk is wrong"
    assert published - set(PATTERN_MESSAGES) == set()


def test_a_scope_id_of_the_wrong_form_is_told_the_allowed_form() -> None:
    with pytest.raises(ValidationError) as caught:
        ScopeCreate(scope_id="bad scope id", title="t")
    told = describe_error(caught.value.errors()[0])
    assert told.startswith("scope_id: must start with a letter or digit"), told
    assert "letters, digits and . _ : @ + = ~ -" in told and "256" in told


class _Bounded(BaseModel):
    content: Annotated[str, AfterValidator(utf8_bounded("content", 8))]


def test_a_validators_message_is_not_prefixed_with_pydantics_words() -> None:
    with pytest.raises(ValidationError) as caught:
        _Bounded(content="x" * 9)
    told = describe_error(caught.value.errors()[0])
    assert told == "content: content is 9 UTF-8 bytes; the limit is 8", told
