"""Real deletion: purging an Atomic Memory erases the text of every revision and takes it out of every index.

What stays is a tombstone (``purged_artifacts``): the Artifact's id, family, Scope, revision count and dates, so an
exact read answers ``410 purged`` instead of ``404``, and the ids other records cite (merges, lineage) still resolve
to something. Erased: every revision's body and tags, its embeddings, its full-text postings and term counts. How
much of the erased text the engine's files still hold afterwards is the store's part (``_after_purge``): SQLite
overwrites freed content (``secure_delete``), rewrites the Scope's full-text index and truncates the WAL.
"""

from __future__ import annotations

from powercontext.domain.identity import ArtifactKey
from powercontext.store.core.family_rows import now as _now
from powercontext.store.core.memory_reads import MemoryReads
from powercontext.store.core.memory_rows import FAMILY, SELECT_MEMORY
from powercontext.store.core.terms import TermCounts
from powercontext.store.errors import ArtifactNotFound
from powercontext.store.removal import PurgedArtifact


class Purges(MemoryReads):
    """``purge_memory`` of ``Store``; mixed into ``SqlStore``."""

    def _after_purge(self, scope_id: str) -> None:
        """What the engine does after the purge's transaction so its files no longer hold the text (a store may
        do nothing)."""

    def purge_memory(self, scope_id: str, artifact_id: str) -> PurgedArtifact:
        """Erase every revision of one Atomic Memory and remove it from every index, in one transaction; a
        second purge of the same memory answers the same tombstone."""
        with self._write() as conn:
            row = conn.execute(
                SELECT_MEMORY
                + " WHERE a.scope_id = ? AND a.family = ? AND a.artifact_id = ? AND r.revision = a.head_revision",
                (scope_id, FAMILY, artifact_id),
            ).fetchone()
            if row is None:
                self._require_scope(conn, scope_id)
                raise ArtifactNotFound()
            rowid, head_revision, state, body = row[0], row[4], row[5], row[7]
            key = ArtifactKey(scope_id, FAMILY, artifact_id, head_revision)
            done = conn.execute("SELECT purged_at FROM purged_artifacts WHERE artifact = ?", (rowid,)).fetchone()
            if done is not None:
                return PurgedArtifact(key, head_revision, str(done[0]))
            purged_at = _now()
            if state == "active":
                counts = TermCounts(scope_id, self._fulltext)
                counts.unindex(conn, rowid, body)
                counts.flush(conn)
                self._changes.unsearchable(conn, scope_id, FAMILY, rowid)
            conn.execute("UPDATE revisions SET body = '', tags = '[]', fields = NULL WHERE artifact = ?", (rowid,))
            conn.execute("DELETE FROM artifact_embeddings WHERE artifact = ?", (rowid,))
            conn.execute("UPDATE artifacts SET state = 'forgotten', updated_at = ? WHERE id = ?", (purged_at, rowid))
            conn.execute("INSERT INTO purged_artifacts (artifact, purged_at) VALUES (?, ?)", (rowid, purged_at))
        self._after_purge(scope_id)
        return PurgedArtifact(key, head_revision, purged_at)
