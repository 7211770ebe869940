"""The engine's own ``FULLTEXT`` index as the full-text search of an OceanBase store (``?fulltext=native``).

The default (``exact``) keeps packed postings and recomputes SQLite FTS5's BM25, so Receipts match SQLite's to
the last bit and a prepare stays within 2x of SQLite's time (see ``fulltext.py`` and docs/oceanbase.md). This
module is the alternative for a team that wants the database to own its index: one ``fts_native`` row per
indexed document, under a ``FULLTEXT`` index, searched with ``MATCH ... AGAINST`` and ranked by the engine.

What is indexed is the text PowerContext's tokenizer already produced (stemmed words, CJK bigrams,
one-character terms), split by the engine's ``space`` parser with ``min_token_size=1``. So a CJK word inside a
longer CJK text is found (its bigrams are terms), stems agree with the query's, and the query's terms are the
same ones the exact search would use. What differs: the engine's relevance scores (a different BM25 and
statistics, so rankings and Receipts can differ from SQLite's), its stopwords (``a``, ``the`` are never
matched), its statistics (the engine computes them over the whole ``FULLTEXT`` index, every Scope's rows
together, so unlike the default a Scope's ranking can move with other Scopes' content: keep ``exact`` where Scopes
belong to parties that must not influence each other), and its speed (measured in docs/oceanbase.md: one
``MATCH`` costs more than a whole exact prepare, and the index slows bulk writes).

The choice belongs to the database, not to one process: a database created with ``?fulltext=native`` has the
``fts_native`` table, and every Server that opens it maintains that table in the same transaction as
everything else, so writes are searchable by the next request. The packed postings are still kept (the
affordable-terms cut of a query uses their term counts), so the exact search would work on such a database too.
Switching an existing database is a copy: ``powercontext store copy --to '...?fulltext=native'``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from powercontext.store.oceanbase import native_mode

if TYPE_CHECKING:
    from powercontext.store.oceanbase.dialect import Connection

TABLE: Final = "fts_native"

_DDL: Final = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
  fts_table VARCHAR(32) NOT NULL,
  doc_id BIGINT NOT NULL,
  scope_tag VARCHAR(32) NOT NULL,
  body LONGTEXT NOT NULL,
  PRIMARY KEY (fts_table, doc_id),
  KEY fts_native_by_scope (fts_table, scope_tag),
  FULLTEXT INDEX fts_native_body (body) WITH PARSER space PARSER_PROPERTIES=(min_token_size=1)
) DEFAULT CHARSET utf8mb4 COLLATE utf8mb4_bin"""


# The mark of a native database (native_mode.py).
LOCK_ROW: Final = "fulltext-native"


def prepare(conn: Connection, requested_native: bool, display: str) -> bool:
    """Whether this database searches natively; creates the index for a new database that asks for it."""
    return native_mode.claim(
        conn,
        mark=LOCK_ROW,
        requested=requested_native,
        ddl=_DDL,
        holds_data="SELECT 1 FROM fts_docs LIMIT 1",
        option="fulltext=native",
        display=display,
    )


def body(weights: Sequence[float], texts: Sequence[str]) -> str:
    """The indexed text of a document: its columns' terms, a column of weight 2 (a title, a path) twice."""
    parts: list[str] = []
    for weight, text in zip(weights, texts, strict=False):
        parts.extend([text] * max(1, round(weight)))
    return " ".join(parts)


def write(
    conn: Connection,
    removed: Sequence[tuple[str, int]],
    added: Sequence[tuple[str, int, str, str]],
) -> None:
    """Apply one transaction's changes: ``removed`` (table, doc) pairs, then ``added`` (table, doc, tag, body)."""
    by_table: dict[str, list[int]] = {}
    for table, doc in removed:
        by_table.setdefault(table, []).append(doc)
    for table, docs in sorted(by_table.items()):
        for start in range(0, len(docs), 1000):
            chunk = docs[start : start + 1000]
            marks = ", ".join(["%s"] * len(chunk))
            conn.query(f"DELETE FROM {TABLE} WHERE fts_table = %s AND doc_id IN ({marks})", (table, *chunk))
    conn.insert_rows(
        f"INSERT INTO {TABLE} (fts_table, doc_id, scope_tag, body) VALUES ",
        added,
        " ON DUPLICATE KEY UPDATE scope_tag = VALUES(scope_tag), body = VALUES(body)",
    )


def search(conn: Connection, table: str, scope_tag: str, terms: Sequence[str], limit: int) -> list[tuple[float, int]]:
    """(score, doc_id) of the Scope's documents the engine matches, best first (ties: lower doc_id first)."""
    # The tokenizer's terms are letters, digits and CJK characters; nothing in them is a MATCH operator
    # (natural-language mode interprets none anyway), and the text is a bound parameter.
    query = " ".join(dict.fromkeys(term.lower() for term in terms if term))
    if not query or limit < 1:
        return []
    rows = conn.query(
        f"SELECT doc_id, MATCH(body) AGAINST(%s) AS score FROM {TABLE}"
        " WHERE fts_table = %s AND scope_tag = %s AND MATCH(body) AGAINST(%s)"
        " ORDER BY score DESC, doc_id LIMIT %s",
        (query, table, scope_tag, query, limit),
    ).fetchall()
    return [(float(score), int(doc)) for doc, score in rows]
