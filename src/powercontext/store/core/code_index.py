"""``CodeStore`` writes and reads shared by both stores (a mixin of ``core.store.SqlStore``); search is each store's."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from powercontext.store.code import (
    CodeChunkRecord,
    CodeEmbeddingTask,
    CodeFileRecord,
    CodeTreeRecord,
    NewCodeFile,
    ScoredCodeChunk,
    TreeKind,
)
from powercontext.store.core.connections import StoreConnections
from powercontext.store.core.family_rows import now as _now
from powercontext.store.core.vectors import Vector, to_blob
from powercontext.store.errors import CodeNotFound, ScopeNotFound

CODE = "code"  # the vector-cache family of code chunks
CODE_INDEX = "code_fts"  # its full-text index (core/fulltext.py)

# bm25() costs ~3-4 µs per matching chunk (a docsize lookup each): this many keep ranking under ~8 ms.
POSTING_BUDGET = 2_000
_SELECT_TREE = "SELECT scope_id, fingerprint, kind, root_path, max_file_bytes, indexed_at FROM code_trees"


def code_scope_tag(scope_id: str) -> str:
    # One FTS token standing for the Scope, so a MATCH never ranks another Scope's chunks.
    return "c" + hashlib.sha256(scope_id.encode("utf-8")).hexdigest()[:24]


class CodeIndex(StoreConnections):
    """``CodeStore`` over the tables of migrations 5 and 6."""

    def register_code_tree(
        self, scope_id: str, fingerprint: str, kind: TreeKind, root_path: str, max_file_bytes: int
    ) -> CodeTreeRecord:
        now = _now()
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM scopes WHERE scope_id = ?", (scope_id,)).fetchone() is None:
                raise ScopeNotFound(scope_id)
            conn.execute(
                "INSERT INTO code_trees (scope_id, fingerprint, kind, root_path, max_file_bytes, created_at,"
                " indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (scope_id, fingerprint) DO UPDATE SET"
                " kind = excluded.kind, root_path = excluded.root_path, max_file_bytes = excluded.max_file_bytes",
                (scope_id, fingerprint, kind, root_path, max_file_bytes, now, now),
            )
            row = conn.execute(
                _SELECT_TREE + " WHERE scope_id = ? AND fingerprint = ?", (scope_id, fingerprint)
            ).fetchone()
        return CodeTreeRecord(*row)

    def code_file_hashes(self, scope_id: str, fingerprint: str) -> dict[str, str]:
        rows = self._reader().execute(
            "SELECT f.path, f.file_sha256 FROM code_files f JOIN code_trees t ON t.id = f.tree"
            " WHERE t.scope_id = ? AND t.fingerprint = ?",
            (scope_id, fingerprint),
        )
        return dict(rows)

    def put_code_files(self, scope_id: str, fingerprint: str, files: Sequence[NewCodeFile]) -> None:
        tag = code_scope_tag(scope_id)
        with self._write() as conn:
            tree = _tree_id(conn, scope_id, fingerprint)
            for item in files:
                found = conn.execute("SELECT id FROM code_files WHERE tree = ? AND path = ?", (tree, item.path))
                row = found.fetchone()
                if row is None:
                    file_id = conn.execute(
                        "INSERT INTO code_files (tree, path, file_sha256, language, size_bytes, line_count)"
                        " VALUES (?, ?, ?, ?, ?, ?)",
                        (tree, item.path, item.file_sha256, item.language, item.size_bytes, item.line_count),
                    ).lastrowid
                else:
                    file_id = row[0]
                    self._forget_chunks(conn, scope_id, file_id)
                    conn.execute(
                        "UPDATE code_files SET file_sha256 = ?, language = ?, size_bytes = ?, line_count = ?"
                        " WHERE id = ?",
                        (item.file_sha256, item.language, item.size_bytes, item.line_count, file_id),
                    )
                for chunk in item.chunks:
                    chunk_id = conn.execute(
                        "INSERT INTO code_chunks (file, start_line, end_line, snippet_sha256, text)"
                        " VALUES (?, ?, ?, ?, ?)",
                        (file_id, chunk.start_line, chunk.end_line, chunk.snippet_sha256, chunk.text),
                    ).lastrowid
                    self._fulltext.add(conn, CODE_INDEX, chunk_id, tag, (item.path_terms, chunk.terms))
                    if chunk.embedding is not None:
                        e = chunk.embedding
                        conn.execute(
                            "INSERT INTO code_chunk_embeddings (chunk, model_id, vector) VALUES (?, ?, ?)",
                            (chunk_id, e.model_id, to_blob(e.vector)),
                        )
                        self._changes.stored(conn, scope_id, CODE, chunk_id, e.model_id, e.vector)

    def finish_code_index(self, scope_id: str, fingerprint: str, removed_paths: Sequence[str]) -> int:
        with self._write() as conn:
            tree = _tree_id(conn, scope_id, fingerprint)
            for path in removed_paths:
                row = conn.execute("SELECT id FROM code_files WHERE tree = ? AND path = ?", (tree, path)).fetchone()
                if row is not None:
                    self._forget_chunks(conn, scope_id, row[0])
                    conn.execute("DELETE FROM code_files WHERE id = ?", (row[0],))
            count = conn.execute(
                "SELECT COUNT(*) FROM code_chunks c JOIN code_files f ON f.id = c.file WHERE f.tree = ?", (tree,)
            ).fetchone()[0]
            conn.execute("UPDATE code_trees SET indexed_at = ?, chunk_count = ? WHERE id = ?", (_now(), count, tree))
        return int(count)

    def forget_code_tree(self, scope_id: str, fingerprint: str) -> None:
        with self._write() as conn:
            row = conn.execute(
                "SELECT id FROM code_trees WHERE scope_id = ? AND fingerprint = ?", (scope_id, fingerprint)
            ).fetchone()
            if row is None:
                return
            for (file_id,) in conn.execute("SELECT id FROM code_files WHERE tree = ?", (row[0],)).fetchall():
                self._forget_chunks(conn, scope_id, file_id)
            conn.execute("DELETE FROM code_files WHERE tree = ?", (row[0],))
            conn.execute("DELETE FROM code_trees WHERE id = ?", (row[0],))

    def _forget_chunks(self, conn: Any, scope_id: str, file_id: int) -> None:
        for chunk_id in _delete_chunks(conn, file_id):
            self._fulltext.remove(conn, CODE_INDEX, chunk_id, code_scope_tag(scope_id))
            self._changes.unsearchable(conn, scope_id, CODE, chunk_id)

    def search_code_vector(self, scope_id: str, model_id: str, vector: Vector, limit: int) -> list[ScoredCodeChunk]:
        conn = self._reader()
        hits = self._vector_hits(conn, scope_id, CODE, model_id, vector, limit)
        if not hits:
            return []
        by_id = chunk_records(conn, [chunk_id for chunk_id, _ in hits])
        return [ScoredCodeChunk(by_id[i], score) for i, score in hits if i in by_id]

    def code_embedding_backlog(self, model_id: str, after: int, limit: int) -> list[CodeEmbeddingTask]:
        rows = self._reader().execute(
            "SELECT c.id, t.scope_id, c.text FROM code_chunks c CROSS JOIN code_files f CROSS JOIN code_trees t"
            " WHERE c.id > ? AND f.id = c.file AND t.id = f.tree AND NOT EXISTS"
            " (SELECT 1 FROM code_chunk_embeddings e WHERE e.chunk = c.id AND e.model_id = ?) ORDER BY c.id LIMIT ?",
            (after, model_id, limit),
        )
        return [CodeEmbeddingTask(int(chunk_id), str(scope_id), str(text)) for chunk_id, scope_id, text in rows]

    def code_embedding_backlog_size(self, model_id: str) -> int:
        row = self._reader().execute(
            "SELECT count(*) FROM code_chunks c WHERE NOT EXISTS"
            " (SELECT 1 FROM code_chunk_embeddings e WHERE e.chunk = c.id AND e.model_id = ?)",
            (model_id,),
        ).fetchone()
        return int(row[0])

    def write_code_embeddings(self, model_id: str, items: Sequence[tuple[CodeEmbeddingTask, Vector]]) -> int:
        written = 0
        with self._write() as conn:
            for task, vector in items:
                # A removed chunk's id may be reused by a later index: the vector belongs to the row only if it
                # still holds the text that was embedded, in the same Scope.
                row = conn.execute(
                    "SELECT c.text, t.scope_id FROM code_chunks c CROSS JOIN code_files f CROSS JOIN code_trees t"
                    " WHERE c.id = ? AND f.id = c.file AND t.id = f.tree",
                    (task.chunk_id,),
                ).fetchone()
                if row is None or (row[0], row[1]) != (task.text, task.scope_id):
                    continue
                conn.execute("DELETE FROM code_chunk_embeddings WHERE chunk = ?", (task.chunk_id,))
                conn.execute(
                    "INSERT INTO code_chunk_embeddings (chunk, model_id, vector) VALUES (?, ?, ?)",
                    (task.chunk_id, model_id, to_blob(vector)),
                )
                self._changes.stored(conn, task.scope_id, CODE, task.chunk_id, model_id, vector)
                written += 1
        return written

    def has_code_trees(self, scope_id: str) -> bool:
        row = self._reader().execute("SELECT 1 FROM code_trees WHERE scope_id = ? LIMIT 1", (scope_id,)).fetchone()
        return row is not None

    def get_code_tree(self, scope_id: str, fingerprint: str) -> CodeTreeRecord:
        row = (
            self._reader()
            .execute(_SELECT_TREE + " WHERE scope_id = ? AND fingerprint = ?", (scope_id, fingerprint))
            .fetchone()
        )
        if row is None:
            _require_scope(self._reader(), scope_id)
            raise CodeNotFound()
        return CodeTreeRecord(*row)

    def get_code_file(self, scope_id: str, fingerprint: str, path: str) -> CodeFileRecord:
        self.get_code_tree(scope_id, fingerprint)
        row = (
            self._reader()
            .execute(
                "SELECT t.scope_id, t.fingerprint, f.path, f.file_sha256, f.language, f.line_count"
                " FROM code_files f JOIN code_trees t ON t.id = f.tree"
                " WHERE t.scope_id = ? AND t.fingerprint = ? AND f.path = ?",
                (scope_id, fingerprint, path),
            )
            .fetchone()
        )
        if row is None:
            raise CodeNotFound("this work tree has no indexed file at that path")
        return CodeFileRecord(*row)


def _require_scope(conn: Any, scope_id: str) -> None:
    if conn.execute("SELECT 1 FROM scopes WHERE scope_id = ?", (scope_id,)).fetchone() is None:
        raise ScopeNotFound(scope_id)


def _tree_id(conn: Any, scope_id: str, fingerprint: str) -> int:
    row = conn.execute(
        "SELECT id FROM code_trees WHERE scope_id = ? AND fingerprint = ?", (scope_id, fingerprint)
    ).fetchone()
    if row is None:
        _require_scope(conn, scope_id)
        raise CodeNotFound()
    return int(row[0])


def _delete_chunks(conn: Any, file_id: int) -> list[int]:
    ids = [(r[0],) for r in conn.execute("SELECT id FROM code_chunks WHERE file = ?", (file_id,))]
    conn.executemany("DELETE FROM code_chunk_embeddings WHERE chunk = ?", ids)
    conn.executemany("DELETE FROM code_chunks WHERE id = ?", ids)
    return [i for (i,) in ids]


def chunk_records(conn: Any, chunk_ids: list[int], scope_id: str | None = None) -> dict[int, CodeChunkRecord]:
    """The chunks with these row ids (of one Scope's trees when ``scope_id`` is given), by row id."""
    marks = ",".join("?" * len(chunk_ids))
    scope_filter, params = (
        ("", list(chunk_ids)) if scope_id is None else (" AND t.scope_id = ?", [*chunk_ids, scope_id])
    )
    # From the hits, by primary key, always: SQLite keeps a CROSS JOIN's order, OceanBase follows the hint (a
    # comment to SQLite); otherwise OceanBase may scan every code file (tests/store_contract/*query_plans.py).
    rows = conn.execute(
        "SELECT /*+ LEADING(c f t) USE_NL(f t) */ c.id, t.scope_id, t.fingerprint, f.path, f.file_sha256, f.language,"
        " c.start_line, c.end_line, c.snippet_sha256, c.text"
        " FROM code_chunks c CROSS JOIN code_files f ON f.id = c.file CROSS JOIN code_trees t ON t.id = f.tree"
        f" WHERE c.id IN ({marks}){scope_filter}",
        params,
    ).fetchall()
    return {row[0]: CodeChunkRecord(*row[1:]) for row in rows}


def affordable_code_terms(
    conn: Any, scope_id: str, terms: Sequence[str], documents: Callable[[Sequence[str]], dict[str, int]]
) -> tuple[list[str], bool]:
    """The query terms worth scoring, and whether ranking every match is affordable.

    A Scope of at most ``POSTING_BUDGET`` chunks is always ranked whole, with every term. Otherwise
    only terms found in this Scope count, and the rarest of them is kept; further terms are added,
    rarest first, while they are in fewer than half of the Scope's chunks (BM25 clamps such a term's IDF
    to ~0, so it would only add cost) and their document counts fit ``POSTING_BUDGET``. ``documents`` gives the
    Scope's own per-term chunk counts (keyed by the query term), so no other Scope's code changes which are kept.
    """
    if not terms:
        return [], True
    sizes = conn.execute("SELECT COALESCE(SUM(chunk_count), 0) FROM code_trees WHERE scope_id = ?", (scope_id,))
    scope_chunks = int(sizes.fetchone()[0])
    if scope_chunks <= POSTING_BUDGET:
        return list(terms), True
    docs = documents(terms)
    kept: list[str] = []
    total = 0
    for term in sorted((t for t in terms if t in docs), key=lambda t: docs[t]):
        count = docs[term]
        if kept and (2 * count >= scope_chunks or total + count > POSTING_BUDGET):
            break
        kept.append(term)
        total += count
    return kept, total <= POSTING_BUDGET
