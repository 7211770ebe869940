"""Atomic Memory rows: the one select both stores read them with, and its mapping to ``MemoryRecord``."""

from __future__ import annotations

import json
from typing import Any, Final

from powercontext.domain.identity import ArtifactKey
from powercontext.store.base import MemoryRecord
from powercontext.store.core.family_rows import new_id, now, scope_tag

__all__ = ["EMBEDDED_FAMILIES", "FAMILY", "SELECT_MEMORY", "memory_record", "new_artifact_id", "now", "scope_tag"]

FAMILY: Final = "atomic-memory"
# Families whose heads carry embeddings (their revisions.body is the text that was embedded).
EMBEDDED_FAMILIES: Final = "('atomic-memory', 'topic-memory')"

SELECT_MEMORY: Final = """
SELECT a.id, a.scope_id, a.artifact_id, r.revision, a.head_revision, a.state, r.kind, r.body, r.tags,
       r.created_at, a.merged_into, r.merged_from, r.observed_at
FROM artifacts a JOIN revisions r ON r.artifact = a.id
"""


def new_artifact_id() -> str:
    """``am_`` + 26 Crockford base32 characters of 128 random bits."""
    return new_id("am_")


def memory_record(row: Any) -> MemoryRecord:
    """The record of one ``SELECT_MEMORY`` row."""
    (_, scope_id, artifact_id, revision, head, state, kind, body, tags, created, merged_into, merged_from, observed) = (
        row
    )
    # Most memories have no tags and no merge sources: skipping json.loads for "[]" matters on a 30-item pool.
    sources = (
        ()
        if merged_from == "[]"
        else tuple(ArtifactKey(m["scope_id"], FAMILY, m["artifact_id"], m["revision"]) for m in json.loads(merged_from))
    )
    return MemoryRecord(
        ArtifactKey(scope_id, FAMILY, artifact_id, revision),
        head,
        state,
        kind,
        body,
        () if tags == "[]" else tuple(json.loads(tags)),
        created,
        merged_into,
        sources,
        observed_at=observed,
    )
