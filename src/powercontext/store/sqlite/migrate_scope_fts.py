"""Migration 9's data step: every active head and code chunk indexed again, into its Scope's own FTS5 tables.

The shared tables were contentless (nothing can be read back from them), so the indexed text is rebuilt from
what the writes index: an Atomic Memory's body, a Topic Memory's title and body, an Experience's searchable
fields, a code chunk's path and identifier terms (the code indexer's own tokenizer, as ``store copy`` does).
"""

from __future__ import annotations

from typing import Any

from powercontext.code.identifiers import identifier_terms, path_terms
from powercontext.store.core.reindex import index_chunk, index_head
from powercontext.store.sqlite.fulltext import Fts5Index

_ACTIVE_HEADS = (
    "SELECT a.id, a.scope_id, a.family, r.body, r.fields FROM artifacts a"
    " JOIN revisions r ON r.artifact = a.id AND r.revision = a.head_revision"
    " WHERE a.state = 'active' AND a.family IN ('atomic-memory', 'topic-memory', 'experience') ORDER BY a.id"
)
_CHUNKS = (
    "SELECT c.id, t.scope_id, f.path, c.text FROM code_chunks c JOIN code_files f ON f.id = c.file"
    " JOIN code_trees t ON t.id = f.tree ORDER BY c.id"
)


def index_every_scope(conn: Any) -> None:
    """Fill the per-Scope tables (inside the migration's transaction)."""
    fulltext = Fts5Index()
    for rowid, scope_id, family, body, fields in conn.execute(_ACTIVE_HEADS).fetchall():
        index_head(fulltext, conn, rowid, scope_id, family, body, fields)
    for chunk_id, scope_id, path, text in conn.execute(_CHUNKS).fetchall():
        index_chunk(fulltext, conn, chunk_id, scope_id, " ".join(path_terms(path)), " ".join(identifier_terms(text)))
