"""Scope-owned Prompts (both stores): one ``prompt`` Artifact per (Scope, Prompt key), each commit a revision.

Stored in the shared ``artifacts``/``revisions`` tables like the other families: ``artifact_id`` is the
Prompt key, ``fields`` the ``powercontext.prompt.v1`` content as JSON, ``body`` the instructions. Prompts
are never searched, so they have no full-text or vector projection.
"""

from __future__ import annotations

from dataclasses import replace

from powercontext.domain.families import PROMPT, PromptAction
from powercontext.store.base import PromptContent, PromptDemonstration, PromptRecord
from powercontext.store.core.connections import StoreConnections
from powercontext.store.core.family_rows import (
    ArtifactRow,
    family_heads,
    find_head,
    insert_revision,
    next_snapshot_revision,
    now,
    require_scope,
    revision_row,
    set_state,
    transition_head,
)
from powercontext.store.errors import ArtifactNotFound


def _not_found() -> ArtifactNotFound:
    return ArtifactNotFound("this Scope has no prompt Artifact for this key; it uses the built-in Prompt")


def _record(row: ArtifactRow) -> PromptRecord:
    f = row.fields
    content = PromptContent(
        mode=f["mode"],
        instructions=f["instructions"],
        demonstrations=tuple(PromptDemonstration(d["input"], d["expected_output"]) for d in f["demonstrations"]),
        schema_version=f["schema_version"],
    )
    return PromptRecord(row.key, row.head_revision, row.state, content, row.created_at)


class Prompts(StoreConnections):
    """``PromptStore``; mixed into ``SqlStore``."""

    def commit_prompt(
        self, scope_id: str, prompt_key: str, expected_revision: int, content: PromptContent
    ) -> PromptRecord:
        at = now()
        with self._write() as conn:
            head, row_id, revision = next_snapshot_revision(conn, scope_id, PROMPT, prompt_key, expected_revision, at)
            insert_revision(conn, row_id, revision, content.instructions, (), content.wire(), at)
            if head is not None and head.state != "active":
                set_state(conn, row_id, "active", at)
            return _record(revision_row(conn, scope_id, PROMPT, prompt_key, revision))

    def change_prompt_lifecycle(
        self, scope_id: str, prompt_key: str, action: PromptAction, expected_revision: int | None
    ) -> PromptRecord:
        at = now()
        with self._write() as conn:
            head, target = transition_head(
                conn, (scope_id, PROMPT, prompt_key), action, expected_revision, at, _not_found
            )
        return replace(_record(head), state=target)

    def read_prompt_head(self, scope_id: str, prompt_key: str) -> PromptRecord | None:
        head = find_head(self._reader(), scope_id, PROMPT, prompt_key)
        return None if head is None else _record(head)

    def read_prompt_revision(self, scope_id: str, prompt_key: str, revision: int) -> PromptRecord:
        return _record(revision_row(self._reader(), scope_id, PROMPT, prompt_key, revision, _not_found))

    def list_prompt_heads(self, scope_id: str) -> list[PromptRecord]:
        conn = self._reader()
        rows = family_heads(conn, scope_id, PROMPT)
        if not rows:
            require_scope(conn, scope_id)
        return [_record(row) for row in rows]
