"""Profile (both stores): one Artifact per Scope, each commit a full snapshot revision."""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.domain.families import PROFILE, PROFILE_ARTIFACT_ID
from powercontext.domain.identity import ArtifactKey
from powercontext.store.base import ProfileEntry, ProfileRecord
from powercontext.store.core.connections import StoreConnections
from powercontext.store.core.family_rows import (
    ArtifactRow,
    find_head,
    insert_artifact,
    insert_revision,
    now,
    require_scope,
    revision_row,
)
from powercontext.store.errors import ProfileNotFound, RevisionConflict


def _record(row: ArtifactRow) -> ProfileRecord:
    entries = tuple(ProfileEntry(e["key"], e["value"]) for e in row.fields["entries"])
    return ProfileRecord(row.key, row.head_revision, entries, row.created_at)


class Profiles(StoreConnections):
    """The Profile part of ``FamilyStore``."""

    def commit_profile(self, scope_id: str, expected_revision: int, entries: Sequence[ProfileEntry]) -> ProfileRecord:
        """Commit the next snapshot; ``expected_revision`` is the current head, 0 for the first commit."""
        at = now()
        with self._write() as conn:
            head = find_head(conn, scope_id, PROFILE, PROFILE_ARTIFACT_ID)
            if head is None:
                require_scope(conn, scope_id)
            current = 0 if head is None else head.head_revision
            if expected_revision != current:
                raise RevisionConflict(expected_revision, current)
            row_id = insert_artifact(conn, scope_id, PROFILE, PROFILE_ARTIFACT_ID, at) if head is None else head.rowid
            revision = current + 1
            key = ArtifactKey(scope_id, PROFILE, PROFILE_ARTIFACT_ID, revision)
            record = ProfileRecord(key, revision, tuple(entries), at)
            fields = {"entries": [{"key": e.key, "value": e.value} for e in entries]}
            insert_revision(conn, row_id, revision, record.render_text(), (), fields, at)
        return record

    def read_profile_snapshot(self, scope_id: str) -> ProfileRecord | None:
        """The committed head, or None when the Scope has none (or does not exist)."""
        head = find_head(self._reader(), scope_id, PROFILE, PROFILE_ARTIFACT_ID)
        return None if head is None else _record(head)

    def read_profile_revision(self, scope_id: str, revision: int) -> ProfileRecord:
        row = revision_row(self._reader(), scope_id, PROFILE, PROFILE_ARTIFACT_ID, revision, ProfileNotFound)
        return _record(row)
