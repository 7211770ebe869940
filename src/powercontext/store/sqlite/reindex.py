"""Migration 11's data step: every active head and code chunk indexed again, into packed postings.

The per-Scope FTS5 tables were contentless (nothing can be read back from them), so the indexed text is rebuilt
from what the writes index (core/reindex.py): an Atomic Memory's body, a Topic Memory's title and body, an
Experience's searchable fields, a code chunk's path and identifier terms (the code indexer's own tokenizer, as
``store copy`` does). A Scope's ``N`` and token total then count its documents indexed now.
"""

from __future__ import annotations

import re
from typing import Any, Final

from powercontext.code.identifiers import identifier_terms, path_terms
from powercontext.store.core.reindex import index_chunk, index_head
from powercontext.store.sqlite.packed import PackedIndex

_ACTIVE_HEADS: Final = (
    "SELECT a.id, a.scope_id, a.family, r.body, r.fields FROM artifacts a"
    " JOIN revisions r ON r.artifact = a.id AND r.revision = a.head_revision"
    " WHERE a.state = 'active' AND a.family IN ('atomic-memory', 'topic-memory', 'experience') ORDER BY a.id"
)
_CHUNKS: Final = (
    "SELECT c.id, t.scope_id, f.path, c.text FROM code_chunks c JOIN code_files f ON f.id = c.file"
    " JOIN code_trees t ON t.id = f.tree ORDER BY c.id"
)
# The per-Scope FTS5 tables of migration 9 (index name, ``_``, ``s``/``c`` + 24 hex digits).
_FTS5_TABLE: Final = re.compile(r"(atomic_memory|topic_memory|experience|code)_fts_[sc][0-9a-f]{24}(_vocab)?")
_BATCH: Final = 20_000  # documents per flush: bounds the buffered postings


def pack_every_scope(conn: Any) -> None:
    """Drop the FTS5 tables and fill the packed index (inside the migration's transaction)."""
    names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    for vocab in (n for n in names if _FTS5_TABLE.fullmatch(n) and n.endswith("_vocab")):
        conn.execute(f"DROP TABLE {vocab}")
    for table in (n for n in names if _FTS5_TABLE.fullmatch(n) and not n.endswith("_vocab")):
        conn.execute(f"DROP TABLE {table}")
    fulltext = PackedIndex(tails=False)  # migration 14 makes the tail rows' table
    for n, (rowid, scope_id, family, body, fields) in enumerate(conn.execute(_ACTIVE_HEADS).fetchall(), start=1):
        index_head(fulltext, conn, rowid, scope_id, family, body, fields)
        if n % _BATCH == 0:
            fulltext.flush(conn)
    for chunk_id, scope_id, path, text in conn.execute(_CHUNKS).fetchall():
        index_chunk(fulltext, conn, chunk_id, scope_id, " ".join(path_terms(path)), " ".join(identifier_terms(text)))
    fulltext.flush(conn)
