"""Deleting a whole Scope: every row it owns, in every table and index, in one transaction.

Gone afterwards: the Scope, its Artifacts of every family with every revision, embeddings, tombstones and
idempotency keys, Experience Candidates, Sources and their lineage, the code evidence of its work trees, its
full-text postings and term counts, and its name in every other Scope's ``context_references``. The vector
generations of its families are bumped (not deleted) so no in-memory matrix keeps serving its vectors. What the
engine's files still hold afterwards is the store's part (``_after_purge``, as for a purge).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from powercontext.store.core.code_index import code_scope_tag
from powercontext.store.core.family_rows import scope_tag
from powercontext.store.core.purge import Purges
from powercontext.store.removal import DeletedScope

_CHUNK: Final = 500  # ids per IN (...) list
_FAMILIES: Final = ("atomic-memory", "topic-memory", "experience", "profile", "prompt", "code")


def _ids(conn: Any, sql: str, params: Sequence[Any]) -> list[int]:
    return [int(row[0]) for row in conn.execute(sql, list(params)).fetchall()]


def _delete_in(conn: Any, table: str, column: str, ids: Sequence[int]) -> None:
    for start in range(0, len(ids), _CHUNK):
        chunk = list(ids[start : start + _CHUNK])
        conn.execute(f"DELETE FROM {table} WHERE {column} IN ({','.join('?' * len(chunk))})", chunk)


def _children(conn: Any, table: str, column: str, parents: Sequence[int]) -> list[int]:
    found: list[int] = []
    for start in range(0, len(parents), _CHUNK):
        chunk = list(parents[start : start + _CHUNK])
        found += _ids(conn, f"SELECT id FROM {table} WHERE {column} IN ({','.join('?' * len(chunk))})", chunk)
    return found


class ScopeDeletion(Purges):
    """``delete_scope`` of ``Store``; mixed into ``SqlStore``."""

    def delete_scope(self, scope_id: str) -> DeletedScope:
        with self._write() as conn:
            self._require_scope(conn, scope_id)
            artifacts = _ids(conn, "SELECT id FROM artifacts WHERE scope_id = ?", (scope_id,))
            sources = _ids(conn, "SELECT id FROM sources WHERE scope_id = ?", (scope_id,))
            for table in ("revision_sources", "artifact_embeddings", "purged_artifacts", "revisions"):
                _delete_in(conn, table, "artifact", artifacts)
            _delete_in(conn, "revision_sources", "source_row", sources)
            for table in (
                "idempotency_keys",
                "artifacts",
                "artifact_candidates",
                "sources",
                "fts_term_docs",
                "extraction_policies",
            ):
                conn.execute(f"DELETE FROM {table} WHERE scope_id = ?", (scope_id,))
            chunks = self._delete_code(conn, scope_id)
            for tag in (scope_tag(scope_id), code_scope_tag(scope_id)):
                self._fulltext.forget_scope(conn, tag)
            for family in _FAMILIES:
                self._changes.touch(conn, scope_id, family)
            referencing = self._drop_references(conn, scope_id)
            conn.execute("DELETE FROM scopes WHERE scope_id = ?", (scope_id,))
        self._after_purge(scope_id)
        return DeletedScope(scope_id, len(artifacts), len(sources), chunks, tuple(referencing))

    @staticmethod
    def _delete_code(conn: Any, scope_id: str) -> int:
        trees = _ids(conn, "SELECT id FROM code_trees WHERE scope_id = ?", (scope_id,))
        files = _children(conn, "code_files", "tree", trees)
        chunks = _children(conn, "code_chunks", "file", files)
        _delete_in(conn, "code_chunk_embeddings", "chunk", chunks)
        _delete_in(conn, "code_chunks", "id", chunks)
        _delete_in(conn, "code_files", "id", files)
        _delete_in(conn, "code_trees", "id", trees)
        return len(chunks)

    @staticmethod
    def _drop_references(conn: Any, scope_id: str) -> list[str]:
        """Take ``scope_id`` out of every other Scope's references; the Scopes changed, in id order."""
        changed: list[str] = []
        rows = conn.execute("SELECT scope_id, context_references FROM scopes WHERE scope_id <> ?", (scope_id,))
        for other, raw in rows.fetchall():
            references = json.loads(raw)
            if scope_id in references:
                kept = [r for r in references if r != scope_id]
                conn.execute("UPDATE scopes SET context_references = ? WHERE scope_id = ?", (json.dumps(kept), other))
                changed.append(str(other))
        return sorted(changed)
