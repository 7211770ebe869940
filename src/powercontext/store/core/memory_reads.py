"""Atomic Memory reads by key, revision and page; the same statements on every backend."""

from __future__ import annotations

from typing import Any

from powercontext.store.base import MemoryRecord
from powercontext.store.core.connections import StoreConnections
from powercontext.store.core.memory_rows import FAMILY, SELECT_MEMORY, memory_record
from powercontext.store.errors import ArtifactNotFound, ArtifactPurged, RevisionNotFound, ScopeNotFound


class MemoryReads(StoreConnections):
    """The Atomic Memory reads of ``Store`` (not search: each adapter searches its own way)."""

    @staticmethod
    def _require_scope(conn: Any, scope_id: str) -> None:
        if conn.execute("SELECT 1 FROM scopes WHERE scope_id = ?", (scope_id,)).fetchone() is None:
            raise ScopeNotFound(scope_id)

    def _head_row(self, conn: Any, scope_id: str, artifact_id: str) -> Any:
        row = conn.execute(
            SELECT_MEMORY
            + " WHERE a.scope_id = ? AND a.family = ? AND a.artifact_id = ? AND r.revision = a.head_revision",
            (scope_id, FAMILY, artifact_id),
        ).fetchone()
        if row is None:
            self._require_scope(conn, scope_id)
            raise ArtifactNotFound()
        _refuse_purged(conn, row[0])
        return row

    def read_head(self, scope_id: str, artifact_id: str) -> MemoryRecord:
        return memory_record(self._head_row(self._reader(), scope_id, artifact_id))

    def read_revision(self, scope_id: str, artifact_id: str, revision: int) -> MemoryRecord:
        conn = self._reader()
        row = conn.execute(
            SELECT_MEMORY + " WHERE a.scope_id = ? AND a.family = ? AND a.artifact_id = ? AND r.revision = ?",
            (scope_id, FAMILY, artifact_id, revision),
        ).fetchone()
        if row is None:
            head = self._head_row(conn, scope_id, artifact_id)
            raise RevisionNotFound(head[4])
        _refuse_purged(conn, row[0])
        return memory_record(row)

    def list_memories(
        self, scope_id: str, state: str | None, before: int | None, limit: int
    ) -> list[tuple[int, MemoryRecord]]:
        conn = self._reader()
        self._require_scope(conn, scope_id)
        # The page's artifacts first (their ids and state, from the artifacts table alone), then the bodies of
        # those only: joined before the ORDER BY ... LIMIT, every head of the Scope was read and sorted with its
        # body (2 s a page at 20,000 memories of 2 KB, whatever the page size).
        page = "SELECT id, scope_id, artifact_id, head_revision, state, merged_into FROM artifacts"
        page += " WHERE scope_id = ? AND family = ? AND id NOT IN (SELECT artifact FROM purged_artifacts)"
        params: list[object] = [scope_id, FAMILY]
        if state is not None:
            page += " AND state = ?"
            params.append(state)
        if before is not None:
            page += " AND id < ?"
            params.append(before)
        params.append(limit)
        sql = _SELECT_PAGE.format(page=page + " ORDER BY id DESC LIMIT ?")
        rows = conn.execute(sql, params).fetchall()
        return [(int(row[0]), memory_record(row)) for row in rows]


def _refuse_purged(conn: Any, rowid: int) -> None:
    """A purged Atomic Memory (``core.purge``) answers every exact read with ``ArtifactPurged``."""
    if conn.execute("SELECT 1 FROM purged_artifacts WHERE artifact = ?", (rowid,)).fetchone() is not None:
        raise ArtifactPurged()


# ``SELECT_MEMORY``'s columns (the embedded engine's text reads recognise it by them) over one page of artifacts.
_SELECT_PAGE = (
    SELECT_MEMORY.split("\nFROM artifacts a")[0]
    + "\nFROM ({page}) a JOIN revisions r ON r.artifact = a.id AND r.revision = a.head_revision ORDER BY a.id DESC"
)
