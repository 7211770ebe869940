"""Real deletion: purging an Artifact erases the text of every revision and takes it out of every index.

What stays is a tombstone (``purged_artifacts``): the Artifact's id, family, Scope, revision count and dates, so an
exact read answers ``410 purged`` instead of ``404``, and the ids other records cite (merges, lineage) still resolve
to something. Erased: every revision's body, fields and tags, its embeddings, its full-text postings (and, for
Atomic Memory, term counts); the text of the Candidates it came from or that would revise it (for Atomic Memory,
also forget or merge it) is replaced by ``[purged]``. A Source purge does the same to the Atomic Memory Candidates
extracted from it (``erase_memory_candidates``), which can then no longer be approved. How much of the erased text
the engine's files still hold afterwards is the store's part (``_after_purge``): SQLite overwrites freed content
(``secure_delete``) and truncates the WAL.
"""

from __future__ import annotations

import json
from typing import Any, Final

from powercontext.contract.common import ArtifactFamily
from powercontext.domain.identity import ArtifactKey
from powercontext.store.core.experiences import EXPERIENCE_FTS
from powercontext.store.core.family_rows import now as _now
from powercontext.store.core.memory_reads import MemoryReads
from powercontext.store.core.memory_rows import FAMILY as ATOMIC
from powercontext.store.core.terms import TermCounts
from powercontext.store.core.topics import TOPIC_FTS
from powercontext.store.errors import ArtifactNotFound
from powercontext.store.removal import PurgedArtifact

PURGEABLE: Final[tuple[ArtifactFamily, ...]] = ("atomic-memory", "topic-memory", "experience")
PURGED_TEXT: Final = "[purged]"


class Purges(MemoryReads):
    """``purge_memory`` and ``purge_artifact`` of ``Store``; mixed into ``SqlStore``."""

    def _after_purge(self, scope_id: str) -> None:
        """What the engine does after the purge's transaction so its files no longer hold the text (a store may
        do nothing)."""

    def purge_memory(self, scope_id: str, artifact_id: str) -> PurgedArtifact:
        """``purge_artifact`` of an Atomic Memory."""
        return self.purge_artifact(scope_id, ATOMIC, artifact_id)

    def purge_artifact(self, scope_id: str, family: ArtifactFamily, artifact_id: str) -> PurgedArtifact:
        """Erase every revision of one Atomic Memory, Topic Memory or Experience and remove it from every index,
        in one transaction; a second purge of the same Artifact answers the same tombstone."""
        if family not in PURGEABLE:
            raise ArtifactNotFound(f"a {family} cannot be purged on its own; delete its Scope instead")
        with self._write() as conn:
            found = self._purge_in(conn, scope_id, family, artifact_id)
        self._after_purge(scope_id)
        return found

    def _purge_in(self, conn: Any, scope_id: str, family: ArtifactFamily, artifact_id: str) -> PurgedArtifact:
        raw = conn.execute(
            "SELECT a.id, a.head_revision, a.state, r.body FROM artifacts a JOIN revisions r"
            " ON r.artifact = a.id AND r.revision = a.head_revision"
            " WHERE a.scope_id = ? AND a.family = ? AND a.artifact_id = ?",
            (scope_id, family, artifact_id),
        ).fetchone()
        if raw is None:
            self._require_scope(conn, scope_id)
            raise ArtifactNotFound()
        rowid, head_revision, state, body = int(raw[0]), int(raw[1]), str(raw[2]), str(raw[3])
        key = ArtifactKey(scope_id, family, artifact_id, head_revision)
        done = conn.execute("SELECT purged_at FROM purged_artifacts WHERE artifact = ?", (rowid,)).fetchone()
        if done is not None:
            return PurgedArtifact(key, head_revision, str(done[0]))
        purged_at = _now()
        if state == "active":
            self._unindex(conn, scope_id, family, rowid, body)
        erased_fields = None if family == ATOMIC else "{}"
        conn.execute(
            "UPDATE revisions SET body = '', tags = '[]', fields = ? WHERE artifact = ?", (erased_fields, rowid)
        )
        conn.execute("DELETE FROM artifact_embeddings WHERE artifact = ?", (rowid,))
        if family == "experience":
            _erase_candidates(conn, scope_id, artifact_id)
        elif family == ATOMIC:
            erase_memory_candidates(conn, scope_id, artifact_id=artifact_id)
        final = "forgotten" if family == ATOMIC else "retired"
        conn.execute("UPDATE artifacts SET state = ?, updated_at = ? WHERE id = ?", (final, purged_at, rowid))
        conn.execute("INSERT INTO purged_artifacts (artifact, purged_at) VALUES (?, ?)", (rowid, purged_at))
        return PurgedArtifact(key, head_revision, purged_at)

    def _unindex(self, conn: Any, scope_id: str, family: ArtifactFamily, rowid: int, body: str) -> None:
        if family == ATOMIC:
            counts = TermCounts(scope_id, self._fulltext)
            counts.unindex(conn, rowid, body)
            counts.flush(conn)
        else:
            (TOPIC_FTS if family == "topic-memory" else EXPERIENCE_FTS).remove(self._fulltext, conn, rowid, scope_id)
        self._changes.unsearchable(conn, scope_id, family, rowid)


def _erase_candidates(conn: Any, scope_id: str, artifact_id: str) -> None:
    """The Candidates an Experience was approved from, or that propose to revise it, hold its text too."""
    rows = conn.execute(
        "SELECT id, fields FROM artifact_candidates WHERE scope_id = ? AND family = 'experience'"
        " AND (result_artifact_id = ? OR target_artifact_id = ?)",
        (scope_id, artifact_id, artifact_id),
    ).fetchall()
    for row_id, fields in rows:
        erased = {name: PURGED_TEXT if isinstance(value, str) else value for name, value in json.loads(fields).items()}
        conn.execute(
            "UPDATE artifact_candidates SET fields = ?, tags = '[]' WHERE id = ?", (json.dumps(erased), row_id)
        )


def erase_memory_candidates(conn: Any, scope_id: str, *, artifact_id: str = "", source_id: str = "") -> None:
    """Erase the text of the Atomic Memory Candidates extracted from a Source (``source_id``), or that wrote,
    revise, forget or merge an Atomic Memory (``artifact_id``), whatever their status; each is marked ``purged``
    so it can no longer be approved. Inside the caller's purge transaction."""
    needle = source_id or artifact_id
    rows = conn.execute(
        "SELECT id, fields, target_artifact_id, result_artifact_id FROM artifact_candidates"
        " WHERE scope_id = ? AND family = 'atomic-memory'"
        " AND (result_artifact_id = ? OR target_artifact_id = ? OR fields LIKE ?)",
        (scope_id, artifact_id, artifact_id, f"%{needle}%"),
    ).fetchall()
    for row_id, raw, target, result in rows:
        fields = json.loads(raw)
        if source_id:
            hit = fields.get("source_id") == source_id
        else:
            named = {target, result, *(str(merged[0]) for merged in fields.get("merge", ()))}
            hit = artifact_id in named
        if not hit or fields.get("purged"):
            continue
        erased = {**fields, "purged": True}
        erased.update({name: PURGED_TEXT if name == "text" else [] for name in ("text", "tags") if name in fields})
        conn.execute("UPDATE artifact_candidates SET fields = ? WHERE id = ?", (json.dumps(erased), row_id))
