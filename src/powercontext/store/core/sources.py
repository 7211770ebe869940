"""Sources and lineage (both stores): capture, the extraction worker's leases, and applying its operations.

``finish_source`` is the one place extracted operations are written: the Atomic Memory writes, their lineage rows
(a revision keeps the Sources of the revision it replaces, then adds this one), and the Source's new state commit
together or not at all, and only while the worker still holds
the lease it claimed (the lease's owner and expiry act as a fencing token: a claim by another worker changes them).
So a Source is extracted once even with several Servers on one store, and a killed worker leaves it pending.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from powercontext.domain.identity import ArtifactKey
from powercontext.store.base import MemoryEdit, MemoryMerge, NewMemory
from powercontext.store.core.family_rows import new_id, now
from powercontext.store.core.memory_rows import FAMILY
from powercontext.store.core.memory_writes import MemoryWrites
from powercontext.store.core.purge import Purges, erase_memory_candidates
from powercontext.store.core.terms import TermCounts
from powercontext.store.errors import SourceLeaseLost, SourceNotFound, SourcePurged
from powercontext.store.source_records import (
    PURGED,
    WAITING_FOR_MODEL,
    ClaimedSource,
    CreateMemory,
    ExtractionStatus,
    ForgetMemory,
    MergeMemories,
    NewSource,
    SourceOperation,
    SourceOrigin,
    SourceRecord,
    SourceRef,
)

SELECT_SOURCE = (
    "SELECT id, scope_id, source_id, kind, content, content_digest, redactions, origin_host, origin_session,"
    " origin_turn, observed_at, created_at, status, reason, attempts FROM sources"
)
_REF_COLUMNS = "s.scope_id, s.source_id, s.kind, s.observed_at, s.origin_host, s.origin_session, s.origin_turn"


def _ref(scope_id: str, source_id: str, kind: Any, observed: str, host: Any, session: Any, turn: Any) -> SourceRef:
    origin = SourceOrigin(host, session, None if turn is None else int(turn))
    return SourceRef(scope_id, source_id, kind, observed, origin)


def _record(row: Any, writes: tuple[ArtifactKey, ...]) -> SourceRecord:
    (_, scope_id, source_id, kind, content, digest, redactions, host, session, turn, observed, created, *rest) = row
    status, reason, attempts = rest
    found = tuple((str(kind_), int(n)) for kind_, n in json.loads(redactions))
    ref = _ref(scope_id, source_id, kind, observed, host, session, turn)
    return SourceRecord(ref, content, digest, found, created, status, reason, int(attempts), writes)


def _later(seconds: float) -> str:
    moment = datetime.now(UTC) + timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class SourceWrites(MemoryWrites, Purges):
    """``SourceStore``; mixed into ``SqlStore`` (it writes Atomic Memory with ``MemoryWrites``' statements)."""

    # -- capture and reads ---------------------------------------------------------------------------------------

    def create_source(self, scope_id: str, source: NewSource) -> SourceRecord:
        at = now()
        source_id = new_id("src_")
        origin = source.origin
        with self._write() as conn:
            self._require_scope(conn, scope_id)
            conn.execute(
                "INSERT INTO sources (scope_id, source_id, kind, content, content_digest, redactions, origin_host,"
                " origin_session, origin_turn, observed_at, created_at, status, reason, attempts)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
                (
                    scope_id,
                    source_id,
                    source.kind,
                    source.content,
                    source.content_digest,
                    json.dumps([list(pair) for pair in source.redactions]),
                    origin.host,
                    origin.session_id,
                    origin.turn,
                    source.observed_at or at,
                    at,
                    source.status,
                    source.reason,
                ),
            )
            row = conn.execute(SELECT_SOURCE + " WHERE scope_id = ? AND source_id = ?", (scope_id, source_id))
            return _record(row.fetchone(), ())

    def read_source(self, scope_id: str, source_id: str) -> SourceRecord:
        conn = self._reader()
        row = conn.execute(SELECT_SOURCE + " WHERE scope_id = ? AND source_id = ?", (scope_id, source_id)).fetchone()
        if row is None:
            self._require_scope(conn, scope_id)
            raise SourceNotFound()
        if row[13] == PURGED:
            raise SourcePurged()
        return _record(row, self._writes_of(conn, [row[0]]).get(row[0], ()))

    def list_sources(self, scope_id: str, before: int | None, limit: int) -> list[tuple[int, SourceRecord]]:
        conn = self._reader()
        if before is None:
            rows = conn.execute(SELECT_SOURCE + " WHERE scope_id = ? ORDER BY id DESC LIMIT ?", (scope_id, limit))
        else:
            query = SELECT_SOURCE + " WHERE scope_id = ? AND id < ? ORDER BY id DESC LIMIT ?"
            rows = conn.execute(query, (scope_id, before, limit))
        found = rows.fetchall()
        if not found:
            self._require_scope(conn, scope_id)
        writes = self._writes_of(conn, [row[0] for row in found])
        return [(int(row[0]), _record(row, writes.get(row[0], ()))) for row in found]

    @staticmethod
    def _writes_of(conn: Any, rowids: Sequence[int]) -> dict[int, tuple[ArtifactKey, ...]]:
        if not rowids:
            return {}
        marks = ",".join("?" * len(rowids))
        rows = conn.execute(
            "SELECT rs.source_row, a.scope_id, a.family, a.artifact_id, rs.revision FROM revision_sources rs"
            f" JOIN artifacts a ON a.id = rs.artifact WHERE rs.source_row IN ({marks}) ORDER BY a.id, rs.revision",
            list(rowids),
        ).fetchall()
        found: dict[int, list[ArtifactKey]] = {}
        for source_row, scope_id, family, artifact_id, revision in rows:
            found.setdefault(source_row, []).append(ArtifactKey(scope_id, family, artifact_id, int(revision)))
        return {rowid: tuple(keys) for rowid, keys in found.items()}

    def pending_sources(self) -> dict[str, int]:
        rows = (
            self._reader()
            .execute("SELECT scope_id, COUNT(*) FROM sources WHERE status = 'pending' GROUP BY scope_id")
            .fetchall()
        )
        return {scope_id: int(count) for scope_id, count in rows}

    def source_refs(self, keys: Sequence[ArtifactKey]) -> dict[ArtifactKey, tuple[SourceRef, ...]]:
        found: dict[ArtifactKey, list[SourceRef]] = {}
        conn = self._reader()
        for scope_id in {k.scope_id for k in keys}:
            wanted = {k for k in keys if k.scope_id == scope_id}
            ids = sorted({k.artifact_id for k in wanted})
            marks = ",".join("?" * len(ids))
            rows = conn.execute(
                f"SELECT a.artifact_id, a.family, rs.revision, {_REF_COLUMNS} FROM revision_sources rs"
                " JOIN artifacts a ON a.id = rs.artifact JOIN sources s ON s.id = rs.source_row"
                f" WHERE a.scope_id = ? AND a.artifact_id IN ({marks}) ORDER BY s.id",
                [scope_id, *ids],
            ).fetchall()
            for artifact_id, family, revision, *ref in rows:
                key = ArtifactKey(scope_id, family, artifact_id, int(revision))
                if key in wanted:
                    found.setdefault(key, []).append(_ref(*ref))
        return {key: tuple(refs) for key, refs in found.items()}

    # -- the extraction worker -----------------------------------------------------------------------------------

    def claim_sources(self, owner: str, lease_s: float, limit: int, with_model: bool) -> list[ClaimedSource]:
        at, until = now(), _later(lease_s)
        query = (
            "SELECT id FROM sources WHERE status = 'pending' AND (next_attempt_at IS NULL OR next_attempt_at <= ?)"
            " AND (lease_until IS NULL OR lease_until < ?)"
        )
        params: list[Any] = [at, at]
        if not with_model:
            query += " AND (reason IS NULL OR reason <> ?)"
            params.append(WAITING_FOR_MODEL)
        with self._write() as conn:
            ids = [int(row[0]) for row in conn.execute(query + " ORDER BY id LIMIT ?", [*params, limit]).fetchall()]
            if not ids:
                return []
            marks = ",".join("?" * len(ids))
            conn.execute(
                f"UPDATE sources SET lease_owner = ?, lease_until = ?, attempts = attempts + 1 WHERE id IN ({marks})",
                [owner, until, *ids],
            )
            rows = conn.execute(SELECT_SOURCE + f" WHERE id IN ({marks}) ORDER BY id", ids).fetchall()
        return [ClaimedSource(_record(row, ()), owner, until) for row in rows]

    def _held(self, conn: Any, claim: ClaimedSource) -> int:
        """The claimed Source's row id, while the claim's lease is still the one on the row."""
        ref = claim.record.ref
        row = conn.execute(
            "SELECT id, status, lease_owner, lease_until FROM sources WHERE scope_id = ? AND source_id = ?",
            (ref.scope_id, ref.source_id),
        ).fetchone()
        if row is None or row[1] != "pending" or (row[2], row[3]) != (claim.lease_owner, claim.lease_until):
            raise SourceLeaseLost()
        return int(row[0])

    def finish_source(
        self, claim: ClaimedSource, operations: Sequence[SourceOperation], status: ExtractionStatus
    ) -> SourceRecord:
        ref = claim.record.ref
        at = now()
        with self._write() as conn:
            source_row = self._held(conn, claim)
            counts = TermCounts(ref.scope_id, self._fulltext)
            for op in operations:
                self._apply(conn, ref.scope_id, op, source_row, ref.observed_at, at, counts)
            counts.flush(conn)
            conn.execute(
                "UPDATE sources SET status = ?, reason = NULL, lease_owner = NULL, lease_until = NULL,"
                " next_attempt_at = NULL WHERE id = ?",
                (status, source_row),
            )
            return self._source_record(conn, conn.execute(SELECT_SOURCE + " WHERE id = ?", (source_row,)).fetchone())

    def _apply(
        self,
        conn: Any,
        scope_id: str,
        op: SourceOperation,
        source_row: int,
        observed_at: str,
        at: str,
        counts: TermCounts,
    ) -> ArtifactKey | None:
        """One operation inside the caller's transaction, with its lineage; the revision it wrote (None: forget)."""
        if isinstance(op, ForgetMemory):
            self._change_lifecycle(conn, scope_id, op.artifact_id, "forget", op.expected_revision, at)
            return None
        if isinstance(op, CreateMemory):
            item = NewMemory(op.text, op.kind, op.tags, embedding=op.embedding, observed_at=observed_at)
            rowid, record = self._insert_memory(conn, scope_id, item, at, counts)
        elif isinstance(op, MergeMemories):
            merge = MemoryMerge(op.sources, op.text, op.kind, (), op.embedding, observed_at)
            rowid, record = self._merge_memories(conn, scope_id, merge, at, counts)
            # The merged statement keeps the evidence of every revision it replaces (once each), then this Source's.
            evidence: set[int] = set()
            for artifact_id, revision in op.sources:
                rows = conn.execute(
                    "SELECT rs.source_row FROM revision_sources rs JOIN artifacts a ON a.id = rs.artifact"
                    " WHERE a.scope_id = ? AND a.family = ? AND a.artifact_id = ? AND rs.revision = ?",
                    (scope_id, FAMILY, artifact_id, revision),
                ).fetchall()
                evidence.update(int(row[0]) for row in rows)
            for row in sorted(evidence - {source_row}):
                conn.execute(
                    "INSERT INTO revision_sources (artifact, revision, source_row) VALUES (?, 1, ?)", (rowid, row)
                )
        else:
            edit = MemoryEdit(op.text, embedding=op.embedding, observed_at=observed_at)
            rowid, record = self._revise_memory(conn, scope_id, op.artifact_id, op.expected_revision, edit, at)
            # The revised statement keeps the evidence of the one it replaces, then this Source's.
            conn.execute(
                "INSERT INTO revision_sources (artifact, revision, source_row) SELECT artifact, ?, source_row"
                " FROM revision_sources WHERE artifact = ? AND revision = ? AND source_row <> ?",
                (record.key.revision, rowid, op.expected_revision, source_row),
            )
        conn.execute(
            "INSERT INTO revision_sources (artifact, revision, source_row) VALUES (?, ?, ?)",
            (rowid, record.key.revision, source_row),
        )
        return record.key

    @staticmethod
    def _source_select() -> str:
        return SELECT_SOURCE + " WHERE id = ?"

    def _source_record(self, conn: Any, row: Any) -> SourceRecord:
        return _record(row, self._writes_of(conn, [row[0]]).get(row[0], ()))

    def purge_source(self, scope_id: str, source_id: str) -> SourceRecord:
        with self._write() as conn:
            row = conn.execute(
                "SELECT id, status FROM sources WHERE scope_id = ? AND source_id = ?", (scope_id, source_id)
            )
            found = row.fetchone()
            if found is None:
                self._require_scope(conn, scope_id)
                raise SourceNotFound()
            status = "skipped" if found[1] == "pending" else found[1]
            conn.execute(
                "UPDATE sources SET content = '', content_digest = '', status = ?, reason = ?, lease_owner = NULL,"
                " lease_until = NULL, next_attempt_at = NULL WHERE id = ?",
                (status, PURGED, found[0]),
            )
            erase_memory_candidates(conn, scope_id, source_id=source_id)
            purged = self._source_record(conn, conn.execute(SELECT_SOURCE + " WHERE id = ?", (found[0],)).fetchone())
        self._after_purge(scope_id)
        return purged

    def defer_source(self, claim: ClaimedSource, reason: str, retry_at: str | None, give_up: bool) -> SourceRecord:
        with self._write() as conn:
            source_row = self._held(conn, claim)
            conn.execute(
                "UPDATE sources SET status = ?, reason = ?, next_attempt_at = ?, lease_owner = NULL,"
                " lease_until = NULL WHERE id = ?",
                ("failed" if give_up else "pending", reason, retry_at, source_row),
            )
            return self._source_record(conn, conn.execute(SELECT_SOURCE + " WHERE id = ?", (source_row,)).fetchone())
