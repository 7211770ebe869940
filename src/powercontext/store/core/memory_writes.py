"""Atomic Memory writes: create (with idempotent replay), revise, lifecycle and merge, each one transaction.

The statements are the store's portable SQL (``?`` placeholders, ``ON CONFLICT … DO UPDATE``, writes to a
Scope's full-text table by name); each adapter's connection runs them in its dialect.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from powercontext.domain.identity import ArtifactKey
from powercontext.domain.lifecycle import LifecycleAction, TransitionRefused, next_state
from powercontext.store.base import Embedding, MemoryEdit, MemoryMerge, MemoryRecord, NewMemory
from powercontext.store.core.family_rows import insert_artifact
from powercontext.store.core.family_rows import now as _now
from powercontext.store.core.memory_plan import plan_batch
from powercontext.store.core.memory_reads import MemoryReads
from powercontext.store.core.memory_rows import FAMILY, SELECT_MEMORY, memory_record, new_artifact_id
from powercontext.store.core.terms import TermCounts
from powercontext.store.errors import IdempotencyConflict, InvalidMerge, NotActive, RevisionConflict


class MemoryWrites(MemoryReads):
    """The Atomic Memory writes of ``Store``; mixed into ``SqlStore``."""

    def create_memories(self, scope_id: str, items: Sequence[NewMemory]) -> list[MemoryRecord]:
        now = _now()
        with self._write() as conn:
            self._require_scope(conn, scope_id)
            plan = plan_batch(scope_id, items, now, lambda item: self._replay(conn, scope_id, item))
            counts = TermCounts(scope_id, self._fulltext)
            for item, artifact_id in plan.fresh:
                self._insert_memory(conn, scope_id, item, now, counts, artifact_id)
            counts.flush(conn)
        return plan.results

    def _insert_memory(
        self, conn: Any, scope_id: str, item: NewMemory, now: str, counts: TermCounts, artifact_id: str | None = None
    ) -> tuple[int, MemoryRecord]:
        """Revision 1 of a new Atomic Memory, inside the caller's transaction; (its row id, its record).
        ``artifact_id``: the one a batch plan chose (core/memory_plan.py), else a new one."""
        artifact_id = artifact_id or new_artifact_id()
        rowid = insert_artifact(conn, scope_id, FAMILY, artifact_id, now)
        tags = json.dumps(list(item.tags))
        conn.execute(
            "INSERT INTO revisions (artifact, revision, kind, body, tags, created_at, observed_at)"
            " VALUES (?, 1, ?, ?, ?, ?, ?)",
            (rowid, item.kind, item.text, tags, now, item.observed_at),
        )
        counts.index(conn, rowid, item.text)
        self._changes.touch(conn, scope_id, FAMILY)
        if item.embedding is not None:
            self._store_embedding(conn, scope_id, rowid, 1, item.embedding)
        if item.idempotency_key is not None:
            conn.execute(
                "INSERT INTO idempotency_keys (scope_id, idem_key, request_digest, artifact) VALUES (?, ?, ?, ?)",
                (scope_id, item.idempotency_key, item.request_digest, rowid),
            )
        key = ArtifactKey(scope_id, FAMILY, artifact_id, 1)
        record = MemoryRecord(
            key, 1, "active", item.kind, item.text, item.tags, now, None, (), observed_at=item.observed_at
        )
        return rowid, record

    def _replay(self, conn: Any, scope_id: str, item: NewMemory) -> MemoryRecord | None:
        row = conn.execute(
            "SELECT request_digest, artifact FROM idempotency_keys WHERE scope_id = ? AND idem_key = ?",
            (scope_id, item.idempotency_key),
        ).fetchone()
        if row is None:
            return None
        if row[0] != item.request_digest:
            raise IdempotencyConflict()
        found = conn.execute(SELECT_MEMORY + " WHERE a.id = ? AND r.revision = 1", (row[1],)).fetchone()
        return memory_record(found)

    def revise_memory(self, scope_id: str, artifact_id: str, expected_revision: int, edit: MemoryEdit) -> MemoryRecord:
        with self._write() as conn:
            return self._revise_memory(conn, scope_id, artifact_id, expected_revision, edit, _now())[1]

    def _revise_memory(
        self, conn: Any, scope_id: str, artifact_id: str, expected_revision: int, edit: MemoryEdit, now: str
    ) -> tuple[int, MemoryRecord]:
        """The next revision (compare-and-swap), inside the caller's transaction; (the row id, its record)."""
        text = edit.text
        head = self._head_row(conn, scope_id, artifact_id)
        rowid, head_revision, state = head[0], head[4], head[5]
        if state != "active":
            raise NotActive(f"only active Atomic Memories can be revised; this one is {state}")
        if expected_revision != head_revision:
            raise RevisionConflict(expected_revision, head_revision)
        new_kind = edit.kind if edit.kind is not None else head[6]
        new_tags = list(edit.tags) if edit.tags is not None else json.loads(head[8])
        revision = head_revision + 1
        conn.execute(
            "INSERT INTO revisions (artifact, revision, kind, body, tags, created_at, observed_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (rowid, revision, new_kind, text, json.dumps(new_tags), now, edit.observed_at),
        )
        conn.execute("UPDATE artifacts SET head_revision = ?, updated_at = ? WHERE id = ?", (revision, now, rowid))
        counts = TermCounts(scope_id, self._fulltext)
        counts.unindex(conn, rowid, head[7])
        counts.index(conn, rowid, text)
        counts.flush(conn)
        self._changes.unsearchable(conn, scope_id, FAMILY, rowid)
        if edit.embedding is not None:
            self._store_embedding(conn, scope_id, rowid, revision, edit.embedding)
        key = ArtifactKey(scope_id, FAMILY, artifact_id, revision)
        record = MemoryRecord(
            key, revision, "active", new_kind, text, tuple(new_tags), now, None, (), observed_at=edit.observed_at
        )
        return rowid, record

    def change_lifecycle(
        self, scope_id: str, artifact_id: str, action: LifecycleAction, expected_revision: int | None
    ) -> MemoryRecord:
        with self._write() as conn:
            return self._change_lifecycle(conn, scope_id, artifact_id, action, expected_revision, _now())

    def _change_lifecycle(
        self,
        conn: Any,
        scope_id: str,
        artifact_id: str,
        action: LifecycleAction,
        expected_revision: int | None,
        now: str,
    ) -> MemoryRecord:
        head = self._head_row(conn, scope_id, artifact_id)
        rowid, head_revision, state = head[0], head[4], head[5]
        if expected_revision is not None and expected_revision != head_revision:
            raise RevisionConflict(expected_revision, head_revision)
        try:
            target = next_state(action, state)
        except TransitionRefused as exc:
            raise NotActive(str(exc)) from exc
        conn.execute("UPDATE artifacts SET state = ?, updated_at = ? WHERE id = ?", (target, now, rowid))
        counts = TermCounts(scope_id, self._fulltext)
        if state == "active":
            counts.unindex(conn, rowid, head[7])
            self._changes.unsearchable(conn, scope_id, FAMILY, rowid)
        if target == "active":
            counts.index(conn, rowid, head[7])
            self._changes.searchable_again(conn, scope_id, FAMILY, rowid, head_revision)
        counts.flush(conn)
        row = conn.execute(SELECT_MEMORY + " WHERE a.id = ? AND r.revision = ?", (rowid, head_revision)).fetchone()
        return memory_record(row)

    def merge_memories(self, scope_id: str, merge: MemoryMerge) -> MemoryRecord:
        ids = [artifact_id for artifact_id, _ in merge.sources]
        if len(set(ids)) != len(ids):
            raise InvalidMerge("each source Atomic Memory may appear only once in a merge")
        with self._write() as conn:
            self._require_scope(conn, scope_id)
            counts = TermCounts(scope_id, self._fulltext)
            record = self._merge_memories(conn, scope_id, merge, _now(), counts)[1]
            counts.flush(conn)
        return record

    def _merge_memories(
        self, conn: Any, scope_id: str, merge: MemoryMerge, now: str, counts: TermCounts
    ) -> tuple[int, MemoryRecord]:
        """The new Atomic Memory replacing exact active revisions (compare-and-swap on each), inside the caller's
        transaction; (its row id, its record). The inputs become ``merged``, out of search."""
        sources, text, kind, tags = merge.sources, merge.text, merge.kind, merge.tags
        heads = []
        for artifact_id, revision in sources:
            head = self._head_row(conn, scope_id, artifact_id)
            if head[5] != "active":
                raise NotActive(f"only active Atomic Memories can be merged; {artifact_id} is {head[5]}")
            if head[4] != revision:
                raise RevisionConflict(revision, head[4])
            heads.append(head)
        merged_id = new_artifact_id()
        merged_rowid = insert_artifact(conn, scope_id, FAMILY, merged_id, now)
        merged_from = [{"scope_id": scope_id, "artifact_id": a, "revision": r} for a, r in sources]
        conn.execute(
            "INSERT INTO revisions (artifact, revision, kind, body, tags, merged_from, created_at, observed_at)"
            " VALUES (?, 1, ?, ?, ?, ?, ?, ?)",
            (merged_rowid, kind, text, json.dumps(list(tags)), json.dumps(merged_from), now, merge.observed_at),
        )
        counts.index(conn, merged_rowid, text)
        self._changes.touch(conn, scope_id, FAMILY)
        if merge.embedding is not None:
            self._store_embedding(conn, scope_id, merged_rowid, 1, merge.embedding)
        for head in heads:
            conn.execute(
                "UPDATE artifacts SET state = 'merged', merged_into = ?, updated_at = ? WHERE id = ?",
                (merged_id, now, head[0]),
            )
            counts.unindex(conn, head[0], head[7])
            self._changes.unsearchable(conn, scope_id, FAMILY, head[0])
        source_keys = tuple(ArtifactKey(scope_id, FAMILY, a, r) for a, r in sources)
        key = ArtifactKey(scope_id, FAMILY, merged_id, 1)
        record = MemoryRecord(
            key, 1, "active", kind, text, tuple(tags), now, None, source_keys, observed_at=merge.observed_at
        )
        return merged_rowid, record

    def _store_embedding(self, conn: Any, scope_id: str, rowid: int, revision: int, embedding: Embedding) -> None:
        self._changes.store(conn, scope_id, FAMILY, rowid, revision, embedding.model_id, embedding.vector)
