"""Migration 9's data step: every active head and code chunk indexed again, into its Scope's own FTS5 tables.

The shared tables were contentless (nothing can be read back from them), so the indexed text is rebuilt from
what the writes index: an Atomic Memory's body, a Topic Memory's title and body, an Experience's searchable
fields, a code chunk's path and identifier terms (the code indexer's own tokenizer, as ``store copy`` does).
"""

from __future__ import annotations

import json
from typing import Any

from powercontext.code.identifiers import identifier_terms, path_terms
from powercontext.store.base import ExperienceContent
from powercontext.store.core import scope_fts
from powercontext.store.core.code_index import code_scope_tag
from powercontext.store.core.experiences import EXPERIENCE_FTS, searchable_text
from powercontext.store.core.family_rows import scope_tag
from powercontext.store.core.topics import TOPIC_FTS
from powercontext.text.tokenize import terms as index_terms

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
    for rowid, scope_id, family, body, fields in conn.execute(_ACTIVE_HEADS).fetchall():
        if family == "atomic-memory":
            tag = scope_tag(scope_id)
            table = scope_fts.ensure_table(conn, "atomic_memory_fts", tag)
            conn.execute(
                f"INSERT INTO {table} (rowid, scope_tag, terms) VALUES (?, ?, ?)",
                (rowid, tag, " ".join(index_terms(body))),
            )
        elif family == "topic-memory":
            parts = json.loads(fields)
            TOPIC_FTS.add(conn, rowid, scope_id, (parts["title"], parts["body"]))
        else:
            parts = json.loads(fields)
            content = ExperienceContent(parts["situation"], parts["what_worked"], parts["what_to_avoid"])
            EXPERIENCE_FTS.add(conn, rowid, scope_id, (searchable_text(content),))
    for chunk_id, scope_id, path, text in conn.execute(_CHUNKS).fetchall():
        tag = code_scope_tag(scope_id)
        table = scope_fts.ensure_table(conn, "code_fts", tag)
        conn.execute(
            f"INSERT INTO {table} (rowid, scope_tag, path_terms, terms) VALUES (?, ?, ?, ?)",
            (chunk_id, tag, " ".join(path_terms(path)), " ".join(identifier_terms(text))),
        )
