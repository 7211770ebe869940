"""One rule for every wire model: integers, booleans and numbers are strict (never coerced from text)."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import pytest
from pydantic import ValidationError

import powercontext.contract
from powercontext.contract.common import StrictModel
from powercontext.contract.memory import AtomicMemorySearchRequest
from powercontext.contract.prepare import PrepareContextRequest


def wire_models() -> list[type[StrictModel]]:
    for module in pkgutil.iter_modules(powercontext.contract.__path__):
        importlib.import_module(f"powercontext.contract.{module.name}")
    found: list[type[StrictModel]] = []
    pending: list[type[StrictModel]] = [StrictModel]
    while pending:
        cls = pending.pop()
        for sub in cls.__subclasses__():
            found.append(sub)
            pending.append(sub)
    return found


def lax_scalars(node: Any, path: str = "") -> list[str]:
    """Paths of ``int``/``bool``/``float`` core-schema nodes that are not strict."""
    if isinstance(node, dict):
        if str(node.get("ref", "")).startswith("pydantic.types.JsonValue"):
            return []  # free-form JSON data (a Prompt demonstration): kept as sent, never coerced into a field
        found = []
        if node.get("type") in ("int", "bool", "float") and node.get("strict") is not True:
            found.append(path or "<root>")
        for key, value in node.items():
            found.extend(lax_scalars(value, f"{path}.{key}"))
        return found
    if isinstance(node, list):
        return [p for i, item in enumerate(node) for p in lax_scalars(item, f"{path}[{i}]")]
    return []


def test_every_wire_model_is_found() -> None:
    names = {m.__name__ for m in wire_models()}
    assert {"PrepareContextRequest", "AtomicMemoryCreate", "ScopeCreate", "PreparedContextReceipt"} <= names


@pytest.mark.parametrize("model", wire_models(), ids=lambda m: m.__name__)
def test_every_integer_boolean_and_number_field_is_strict(model: type[StrictModel]) -> None:
    assert lax_scalars(model.__pydantic_core_schema__) == []


@pytest.mark.parametrize(
    "field, value", [("include_receipt", "yes"), ("include_receipt", 1), ("max_bytes", "1000"), ("max_bytes", 1000.5)]
)
def test_prepare_refuses_other_json_types(field: str, value: object) -> None:
    with pytest.raises(ValidationError):
        PrepareContextRequest.model_validate({"scope_id": "s", "query": "q", field: value})


def test_an_integer_written_with_a_zero_fraction_is_that_integer() -> None:
    # JSON Schema counts 1000.0 as an integer, so the published schema allows it.
    request = PrepareContextRequest.model_validate_json('{"scope_id": "s", "query": "q", "max_bytes": 1000.0}')
    assert request.max_bytes == 1000 and type(request.max_bytes) is int
    assert PrepareContextRequest.model_validate({"scope_id": "s", "query": "q", "max_bytes": 1e3}).max_bytes == 1000


def test_a_number_field_still_takes_an_integer_and_an_integer_field_its_own_type() -> None:
    from powercontext.contract.receipt import StageTiming

    assert StageTiming.model_validate_json('{"stage": "context.build", "duration_ms": 3, "count": 1}').duration_ms == 3
    assert AtomicMemorySearchRequest.model_validate_json('{"query": "q", "limit": 8}').limit == 8
