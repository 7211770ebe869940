"""The review inbox of extracted Atomic Memory writes (both stores), in ``artifact_candidates`` (family
``atomic-memory``): one Candidate per extracted operation, with its Source; approving one applies it with that
Source as lineage, exactly as the worker would have (the compare-and-swap is on the revision the model was shown).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from powercontext.domain.identity import ArtifactKey
from powercontext.store.base import Embedding
from powercontext.store.core.family_rows import new_id, now
from powercontext.store.core.memory_rows import FAMILY
from powercontext.store.core.sources import SourceWrites
from powercontext.store.core.terms import TermCounts
from powercontext.store.errors import CandidateNotFound, CandidateNotPending, CandidatePurged
from powercontext.store.source_records import (
    IN_REVIEW,
    PURGED,
    WRITES_TEXT,
    CandidateState,
    ClaimedSource,
    CreateMemory,
    ExtractionPolicy,
    ForgetMemory,
    MemoryCandidate,
    MergeMemories,
    ReviseMemory,
    SourceOperation,
    SourceRecord,
)

_SELECT = (
    "SELECT c.id, c.scope_id, c.candidate_id, c.status, c.fields, c.target_artifact_id, c.expected_revision,"
    " c.reject_reason, c.result_artifact_id, c.result_revision, c.created_at, c.updated_at"
    " FROM artifact_candidates c WHERE c.family = 'atomic-memory'"
)


def _fields(op: SourceOperation, source_id: str) -> tuple[str, str | None, int | None]:
    """(fields JSON, target artifact, expected revision) of an operation as a Candidate row stores it."""
    if isinstance(op, CreateMemory):
        body = {"op": "create", "text": op.text, "kind": op.kind, "tags": list(op.tags)}
        return json.dumps({**body, "source_id": source_id}, ensure_ascii=False), None, None
    if isinstance(op, ReviseMemory):
        body = {"op": "revise", "text": op.text, "source_id": source_id}
        return json.dumps(body, ensure_ascii=False), op.artifact_id, op.expected_revision
    if isinstance(op, MergeMemories):
        merged: list[list[str | int]] = [[artifact_id, revision] for artifact_id, revision in op.sources]
        fields = {"op": "merge", "text": op.text, "kind": op.kind, "merge": merged, "source_id": source_id}
        return json.dumps(fields, ensure_ascii=False), None, None
    return json.dumps({"op": "forget", "source_id": source_id}), op.artifact_id, op.expected_revision


def _candidate(row: Any) -> MemoryCandidate:
    (_, scope_id, candidate_id, status, fields, target, expected, reason, result_id, result_rev, created, updated) = row
    f = json.loads(fields)
    operation: SourceOperation
    if f["op"] == "create":
        operation = CreateMemory(f["text"], f["kind"], tuple(f.get("tags", ())))
    elif f["op"] == "revise":
        operation = ReviseMemory(target, int(expected), f["text"])
    elif f["op"] == "merge":
        operation = MergeMemories(tuple((str(a), int(r)) for a, r in f["merge"]), f["text"], f["kind"])
    else:
        operation = ForgetMemory(target, int(expected))
    result = None if result_id is None else ArtifactKey(scope_id, FAMILY, result_id, int(result_rev))
    purged = bool(f.get("purged"))
    return MemoryCandidate(
        scope_id, candidate_id, status, operation, f["source_id"], reason, result, created, updated, purged
    )


class MemoryReview(SourceWrites):
    """The review inbox part of ``SourceStore``; mixed into ``SqlStore``."""

    def propose_source(self, claim: ClaimedSource, operations: Sequence[SourceOperation]) -> SourceRecord:
        ref = claim.record.ref
        at = now()
        with self._write() as conn:
            source_row = self._held(conn, claim)
            for op in operations:
                fields, target, expected = _fields(op, ref.source_id)
                conn.execute(
                    "INSERT INTO artifact_candidates (scope_id, family, candidate_id, candidate_revision, status,"
                    " fields, tags, target_artifact_id, expected_revision, created_at, updated_at)"
                    " VALUES (?, 'atomic-memory', ?, 1, 'pending', ?, '[]', ?, ?, ?, ?)",
                    (ref.scope_id, new_id("mc_"), fields, target, expected, at, at),
                )
            conn.execute(
                "UPDATE sources SET status = 'done', reason = ?, lease_owner = NULL, lease_until = NULL,"
                " next_attempt_at = NULL WHERE id = ?",
                (IN_REVIEW, source_row),
            )
            row = conn.execute(self._source_select(), (source_row,)).fetchone()
            return self._source_record(conn, row)

    def list_memory_candidates(
        self, scope_id: str, status: CandidateState | None, before: int | None, limit: int
    ) -> list[tuple[int, MemoryCandidate]]:
        conn = self._reader()
        query = _SELECT + " AND c.scope_id = ?"
        params: list[Any] = [scope_id]
        if status is not None:
            query, params = query + " AND c.status = ?", [*params, status]
        if before is not None:
            query, params = query + " AND c.id < ?", [*params, before]
        rows = conn.execute(query + " ORDER BY c.id DESC LIMIT ?", [*params, limit]).fetchall()
        if not rows:
            self._require_scope(conn, scope_id)
        return [(int(row[0]), _candidate(row)) for row in rows]

    def read_memory_candidate(self, scope_id: str, candidate_id: str) -> MemoryCandidate:
        conn = self._reader()
        return _candidate(self._candidate_row(conn, scope_id, candidate_id))

    def _candidate_row(self, conn: Any, scope_id: str, candidate_id: str) -> Any:
        row = conn.execute(_SELECT + " AND c.scope_id = ? AND c.candidate_id = ?", (scope_id, candidate_id)).fetchone()
        if row is None:
            self._require_scope(conn, scope_id)
            raise CandidateNotFound("extracted memory Candidate")
        return row

    def approve_memory_candidate(
        self, scope_id: str, candidate_id: str, embedding: Embedding | None
    ) -> MemoryCandidate:
        at = now()
        with self._write() as conn:
            row = self._candidate_row(conn, scope_id, candidate_id)
            candidate = _candidate(row)
            if candidate.status != "pending":
                raise CandidateNotPending(candidate.status)
            source = conn.execute(
                "SELECT id, observed_at, reason FROM sources WHERE scope_id = ? AND source_id = ?",
                (scope_id, candidate.source_id),
            ).fetchone()
            if candidate.purged or source[2] == PURGED:  # also a Source purged before its purge erased Candidates
                raise CandidatePurged()
            op = candidate.operation
            if isinstance(op, WRITES_TEXT):
                op = replace(op, embedding=embedding)
            counts = TermCounts(scope_id, self._fulltext)
            result = self._apply(conn, scope_id, op, int(source[0]), str(source[1]), at, counts)
            counts.flush(conn)
            conn.execute(
                "UPDATE artifact_candidates SET status = 'approved', result_artifact_id = ?, result_revision = ?,"
                " updated_at = ? WHERE id = ?",
                (result.artifact_id if result else None, result.revision if result else None, at, row[0]),
            )
            return _candidate(self._candidate_row(conn, scope_id, candidate_id))

    def reject_memory_candidate(self, scope_id: str, candidate_id: str, reason: str | None) -> MemoryCandidate:
        at = now()
        with self._write() as conn:
            row = self._candidate_row(conn, scope_id, candidate_id)
            if row[3] != "pending":
                raise CandidateNotPending(row[3])
            conn.execute(
                "UPDATE artifact_candidates SET status = 'rejected', reject_reason = ?, updated_at = ? WHERE id = ?",
                (reason, at, row[0]),
            )
            return _candidate(self._candidate_row(conn, scope_id, candidate_id))

    def read_extraction_policy(self, scope_id: str) -> ExtractionPolicy | None:
        conn = self._reader()
        row = conn.execute("SELECT explicit, model FROM extraction_policies WHERE scope_id = ?", (scope_id,)).fetchone()
        if row is None:
            self._require_scope(conn, scope_id)
            return None
        return ExtractionPolicy(row[0], row[1])

    def set_extraction_policy(self, scope_id: str, policy: ExtractionPolicy) -> ExtractionPolicy:
        with self._write() as conn:
            self._require_scope(conn, scope_id)
            conn.execute(
                "INSERT INTO extraction_policies (scope_id, explicit, model, updated_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (scope_id) DO UPDATE SET explicit = excluded.explicit, model = excluded.model,"
                " updated_at = excluded.updated_at",
                (scope_id, policy.explicit, policy.model, now()),
            )
        return policy
