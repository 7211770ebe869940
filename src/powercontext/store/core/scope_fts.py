"""One FTS5 table per (index, Scope), so a Scope's BM25 statistics are its own.

FTS5's ``bm25()`` computes the document count, the average length and each term's document frequency over
its whole table. With one table shared by every Scope, the same memories scored differently in a database that
also held other Scopes, and what one Scope's agent received moved with content its caller cannot read (a side
channel, and other tenants' vocabulary shifting the IDF). Each Scope therefore gets its own table of each index
(``atomic_memory_fts_s<hex>``, ``code_fts_c<hex>``, …), created by the first write that indexes something of
that Scope, in the same transaction. The OceanBase store keeps the same statistics per Scope in its own tables
(store/oceanbase/fulltext.py); its connection ignores the ``CREATE`` and maps these names back to the index.

Every row still carries its Scope tag in the ``scope_tag`` column: that token counts in the document's length,
as it always has, so scores stay comparable with databases indexed before this change and with OceanBase.
"""

from __future__ import annotations

import re
from typing import Any, Final

_UNICODE: Final = "tokenize = 'unicode61 remove_diacritics 0', content = '', contentless_delete = 1"
# '_' stays inside a code token, so whole snake_case identifiers match.
_CODE: Final = "tokenize = \"unicode61 remove_diacritics 0 tokenchars '_'\", content = '', contentless_delete = 1"

# Index -> its FTS5 column list (after which the options). Only active heads (chunks for code) have a row.
COLUMNS: Final = {
    "atomic_memory_fts": f"scope_tag, terms, {_UNICODE}",
    "topic_memory_fts": f"scope_tag, title, body, {_UNICODE}",
    "experience_fts": f"scope_tag, terms, {_UNICODE}",
    "code_fts": f"scope_tag, path_terms, terms, {_CODE}",
}
# The tags are ``s``/``c`` + 24 hex digits (store.scope_tag, code.code_scope_tag): safe inside an identifier.
_TAG: Final = re.compile(r"[sc][0-9a-f]{24}")


def table_name(index: str, tag: str) -> str:
    """The physical FTS5 table of ``index`` for the Scope whose tag is ``tag``."""
    if index not in COLUMNS or not _TAG.fullmatch(tag):
        raise ValueError("unknown full-text index or malformed scope tag")
    return f"{index}_{tag}"


def vocab_name(tag: str) -> str:
    """The ``fts5vocab`` table (documents per term) of a Scope's code index."""
    return table_name("code_fts", tag) + "_vocab"


def ensure_table(conn: Any, index: str, tag: str) -> str:
    """The Scope's table of ``index``, created if missing (inside the caller's write transaction)."""
    name = table_name(index, tag)
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5({COLUMNS[index]})")
    if index == "code_fts":
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {vocab_name(tag)} USING fts5vocab({name}, 'row')")
    return name


def missing_table(exc: Exception) -> bool:
    """Whether a read failed only because the Scope never indexed anything there (no table yet)."""
    return "no such table" in str(exc) or "no such fts5 table" in str(exc)
