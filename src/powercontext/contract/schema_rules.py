"""Cross-field rules of the request models, written into their published JSON schema.

Each model checks its rule in a validator; the matching keywords here make the published schema say exactly
the same, so a client (or a fuzzer) validating against the schema is refused nothing the schema allows, and
allowed nothing the Server refuses. ``null`` counts as absent on both sides, as the validators read it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["all_or_none_of", "at_least_one_of", "at_most_one_item_per", "cap_when"]

SchemaHook = Callable[[dict[str, Any]], None]


def at_least_one_of(*names: str) -> SchemaHook:
    """The object has at least one of ``names`` with a non-null value."""

    def hook(schema: dict[str, Any]) -> None:
        schema["anyOf"] = [{"required": [name], "properties": {name: {"not": {"type": "null"}}}} for name in names]

    return hook


def all_or_none_of(*names: str) -> SchemaHook:
    """``names`` are all given (non-null) or all absent or null."""

    def hook(schema: dict[str, Any]) -> None:
        schema["anyOf"] = [
            {"required": list(names), "properties": {name: {"not": {"type": "null"}} for name in names}},
            {"properties": {name: {"type": "null"} for name in names}},
        ]

    return hook


def cap_when(field: str, value: str, capped: str, maximum: int) -> SchemaHook:
    """When ``field`` is ``value``, ``capped`` is at most ``maximum``."""

    def hook(schema: dict[str, Any]) -> None:
        schema["anyOf"] = [
            {"properties": {field: {"not": {"const": value}}}},
            {"properties": {capped: {"maximum": maximum}}},
        ]

    return hook


def at_most_one_item_per(key: str, values: Sequence[str]) -> dict[str, Any]:
    """Array keywords: no two items share the same ``key`` (one of ``values``)."""
    return {
        "allOf": [
            {"contains": {"properties": {key: {"const": v}}, "required": [key]}, "minContains": 0, "maxContains": 1}
            for v in values
        ]
    }
