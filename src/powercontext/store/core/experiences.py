"""Experience (both stores): Candidates under review, immutable approved revisions, and their own full-text index."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Final, cast

from powercontext.domain.families import (
    CANDIDATE_ID_PREFIX,
    EXPERIENCE,
    EXPERIENCE_ID_PREFIX,
    CandidateStatus,
    ExperienceAction,
)
from powercontext.domain.identity import ArtifactKey
from powercontext.store.base import (
    CandidateRecord,
    ExperienceContent,
    ExperienceDraft,
    ExperienceRecord,
)
from powercontext.store.core.connections import StoreConnections
from powercontext.store.core.family_rows import (
    ArtifactRow,
    FtsIndex,
    head_row,
    insert_artifact,
    insert_revision,
    new_id,
    now,
    require_scope,
    revision_row,
    transition_head,
)
from powercontext.store.errors import (
    CandidateNotFound,
    CandidateNotPending,
    CandidateRevisionConflict,
    NotActive,
    RevisionConflict,
)

EXPERIENCE_FTS: Final = FtsIndex("experience_fts", EXPERIENCE, ("terms",), (1.0,))

_SELECT_CANDIDATE = """
SELECT id, scope_id, candidate_id, candidate_revision, status, fields, tags, target_artifact_id, expected_revision,
       reject_reason, result_artifact_id, result_revision, created_at, updated_at
FROM artifact_candidates WHERE scope_id = ? AND family = ? AND candidate_id = ?
"""


def _content(fields: dict[str, Any]) -> ExperienceContent:
    return ExperienceContent(fields["situation"], fields["what_worked"], fields["what_to_avoid"])


def _draft_columns(draft: ExperienceDraft) -> tuple[str, str, str | None, int | None]:
    """A Candidate's draft as its row stores it: fields, tags, target_artifact_id, expected_revision."""
    fields = json.dumps(draft.content.fields(), ensure_ascii=False)
    return fields, json.dumps(list(draft.tags)), draft.target_artifact_id, draft.expected_revision


def searchable_text(content: ExperienceContent) -> str:
    # The field text without the render labels: "situation"/"worked"/"avoid" in every row would only add noise.
    return "\n".join((content.situation, content.what_worked, content.what_to_avoid))


def experience_record(row: ArtifactRow) -> ExperienceRecord:
    return ExperienceRecord(
        row.key,
        row.head_revision,
        row.state,
        _content(row.fields),
        row.tags,
        row.created_at,
        row.fields["candidate_id"],
    )


def _candidate(raw: Any) -> CandidateRecord:
    (_, scope_id, candidate_id, revision, status, fields, tags, target, expected, reason, result_id, result_rev) = raw[
        :12
    ]
    created, updated = raw[12], raw[13]
    draft = ExperienceDraft(_content(json.loads(fields)), tuple(json.loads(tags)), target, expected)
    result = None if result_id is None else ArtifactKey(scope_id, EXPERIENCE, result_id, result_rev)
    return CandidateRecord(
        scope_id, candidate_id, revision, cast(CandidateStatus, status), draft, reason, result, created, updated
    )


def _check_target(conn: Any, scope_id: str, draft: ExperienceDraft) -> ArtifactRow | None:
    """The Experience head a draft revises, if it names one; it must be active and at the expected revision."""
    if draft.target_artifact_id is None or draft.expected_revision is None:
        return None
    head = head_row(conn, scope_id, EXPERIENCE, draft.target_artifact_id)
    if head.state != "active":
        raise NotActive(f"only active Experiences can be revised; this one is {head.state}")
    if draft.expected_revision != head.head_revision:
        raise RevisionConflict(draft.expected_revision, head.head_revision)
    return head


class Experiences(StoreConnections):
    """The Experience half of ``FamilyStore``."""

    # -- candidates ----------------------------------------------------------------------------

    def propose_experience(self, scope_id: str, draft: ExperienceDraft) -> CandidateRecord:
        at = now()
        candidate_id = new_id(CANDIDATE_ID_PREFIX)
        with self._write() as conn:
            require_scope(conn, scope_id)
            _check_target(conn, scope_id, draft)
            conn.execute(
                "INSERT INTO artifact_candidates (scope_id, family, candidate_id, candidate_revision, status, fields,"
                " tags, target_artifact_id, expected_revision, created_at, updated_at)"
                " VALUES (?, ?, ?, 1, 'pending', ?, ?, ?, ?, ?, ?)",
                (scope_id, EXPERIENCE, candidate_id, *_draft_columns(draft), at, at),
            )
        return CandidateRecord(scope_id, candidate_id, 1, "pending", draft, None, None, at, at)

    def read_candidate(self, scope_id: str, candidate_id: str) -> CandidateRecord:
        conn = self._reader()
        raw = conn.execute(_SELECT_CANDIDATE, (scope_id, EXPERIENCE, candidate_id)).fetchone()
        if raw is None:
            require_scope(conn, scope_id)
            raise CandidateNotFound()
        return _candidate(raw)

    @staticmethod
    def _pending(conn: Any, scope_id: str, candidate_id: str, expected: int | None) -> tuple[int, CandidateRecord]:
        raw = conn.execute(_SELECT_CANDIDATE, (scope_id, EXPERIENCE, candidate_id)).fetchone()
        if raw is None:
            require_scope(conn, scope_id)
            raise CandidateNotFound()
        candidate = _candidate(raw)
        if candidate.status != "pending":
            raise CandidateNotPending(candidate.status)
        if expected is not None and expected != candidate.candidate_revision:
            raise CandidateRevisionConflict(expected, candidate.candidate_revision)
        return int(raw[0]), candidate

    def approve_candidate(
        self, scope_id: str, candidate_id: str, expected_candidate_revision: int | None
    ) -> tuple[CandidateRecord, ExperienceRecord]:
        at = now()
        with self._write() as conn:
            candidate_row, candidate = self._pending(conn, scope_id, candidate_id, expected_candidate_revision)
            draft = candidate.draft
            head = _check_target(conn, scope_id, draft)
            if head is None:
                artifact_id, revision = new_id(EXPERIENCE_ID_PREFIX), 1
                row_id = insert_artifact(conn, scope_id, EXPERIENCE, artifact_id, at)
            else:
                artifact_id, revision, row_id = head.artifact_id, head.head_revision + 1, head.rowid
                EXPERIENCE_FTS.remove(self._fulltext, conn, row_id, scope_id)
            fields = {**draft.content.fields(), "candidate_id": candidate_id}
            key = ArtifactKey(scope_id, EXPERIENCE, artifact_id, revision)
            experience = ExperienceRecord(key, revision, "active", draft.content, draft.tags, at, candidate_id)
            insert_revision(conn, row_id, revision, experience.render_text(), draft.tags, fields, at)
            EXPERIENCE_FTS.add(self._fulltext, conn, row_id, scope_id, (searchable_text(draft.content),))
            conn.execute(
                "UPDATE artifact_candidates SET status = 'approved', result_artifact_id = ?, result_revision = ?,"
                " updated_at = ? WHERE id = ?",
                (artifact_id, revision, at, candidate_row),
            )
        return replace(candidate, status="approved", result=key, updated_at=at), experience

    def reject_candidate(
        self, scope_id: str, candidate_id: str, expected_candidate_revision: int | None, reason: str | None
    ) -> CandidateRecord:
        at = now()
        with self._write() as conn:
            candidate_row, candidate = self._pending(conn, scope_id, candidate_id, expected_candidate_revision)
            conn.execute(
                "UPDATE artifact_candidates SET status = 'rejected', reject_reason = ?, updated_at = ? WHERE id = ?",
                (reason, at, candidate_row),
            )
        return replace(candidate, status="rejected", reject_reason=reason, updated_at=at)

    def revise_candidate(
        self, scope_id: str, candidate_id: str, expected_candidate_revision: int, draft: ExperienceDraft
    ) -> CandidateRecord:
        at = now()
        with self._write() as conn:
            candidate_row, candidate = self._pending(conn, scope_id, candidate_id, expected_candidate_revision)
            _check_target(conn, scope_id, draft)
            revision = candidate.candidate_revision + 1
            conn.execute(
                "UPDATE artifact_candidates SET candidate_revision = ?, fields = ?, tags = ?, target_artifact_id = ?,"
                " expected_revision = ?, updated_at = ? WHERE id = ?",
                (revision, *_draft_columns(draft), at, candidate_row),
            )
        return replace(candidate, candidate_revision=revision, draft=draft, updated_at=at)

    # -- experiences ---------------------------------------------------------------------------

    def change_experience_lifecycle(
        self, scope_id: str, artifact_id: str, action: ExperienceAction, expected_revision: int | None
    ) -> ExperienceRecord:
        at = now()
        with self._write() as conn:
            head, target = transition_head(conn, (scope_id, EXPERIENCE, artifact_id), action, expected_revision, at)
            EXPERIENCE_FTS.remove(self._fulltext, conn, head.rowid, scope_id)
        return replace(experience_record(head), state=target)

    def read_experience_head(self, scope_id: str, artifact_id: str) -> ExperienceRecord:
        return experience_record(head_row(self._reader(), scope_id, EXPERIENCE, artifact_id))

    def read_experience_revision(self, scope_id: str, artifact_id: str, revision: int) -> ExperienceRecord:
        return experience_record(revision_row(self._reader(), scope_id, EXPERIENCE, artifact_id, revision))
