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
    insert_revision,
    next_snapshot_revision,
    now,
    revision_row,
)
from powercontext.store.errors import ProfileNotFound


def _record(row: ArtifactRow) -> ProfileRecord:
    entries = tuple(ProfileEntry(e["key"], e["value"]) for e in row.fields["entries"])
    return ProfileRecord(row.key, row.head_revision, entries, row.created_at)


class Profiles(StoreConnections):
    """The Profile part of ``FamilyStore``."""

    def commit_profile(self, scope_id: str, expected_revision: int, entries: Sequence[ProfileEntry]) -> ProfileRecord:
        """Commit the next snapshot; ``expected_revision`` is the current head, 0 for the first commit."""
        at = now()
        with self._write() as conn:
            _, row_id, revision = next_snapshot_revision(
                conn, scope_id, PROFILE, PROFILE_ARTIFACT_ID, expected_revision, at
            )
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
