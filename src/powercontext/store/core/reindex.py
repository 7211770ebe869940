"""Index stored rows again through a store's ``FullTextIndex``: what ``store copy`` and a migration that rebuilds
the indexes both do, from what the writes index (an Atomic Memory's body, a Topic Memory's title and body, an
Experience's searchable fields, a code chunk's path and identifier terms)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from powercontext.store.base import ExperienceContent
from powercontext.store.core.code_index import CODE_INDEX, code_scope_tag
from powercontext.store.core.experiences import EXPERIENCE_FTS, searchable_text
from powercontext.store.core.family_rows import scope_tag
from powercontext.store.core.terms import MEMORY_INDEX
from powercontext.store.core.topics import TOPIC_FTS
from powercontext.text.tokenize import terms as index_terms

if TYPE_CHECKING:
    from powercontext.store.core.fulltext import FullTextIndex


def index_head(
    fulltext: FullTextIndex, conn: Any, rowid: int, scope_id: str, family: str, body: str, fields: str | None
) -> None:
    """Make one active head searchable, as the family's own write does (``fields``: the revision's JSON)."""
    if family == "atomic-memory":
        fulltext.add(conn, MEMORY_INDEX, rowid, scope_tag(scope_id), (" ".join(index_terms(body)),))
    elif family == "topic-memory":
        parts = json.loads(fields or "{}")
        TOPIC_FTS.add(fulltext, conn, rowid, scope_id, (parts["title"], parts["body"]))
    elif family == "experience":
        parts = json.loads(fields or "{}")
        content = ExperienceContent(parts["situation"], parts["what_worked"], parts["what_to_avoid"])
        EXPERIENCE_FTS.add(fulltext, conn, rowid, scope_id, (searchable_text(content),))


def index_chunk(fulltext: FullTextIndex, conn: Any, chunk_id: int, scope_id: str, path_terms: str, terms: str) -> None:
    """Make one code chunk searchable: its path's and its text's terms, space-separated."""
    fulltext.add(conn, CODE_INDEX, chunk_id, code_scope_tag(scope_id), (path_terms, terms))
