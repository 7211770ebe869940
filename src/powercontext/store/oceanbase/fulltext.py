"""Full-text postings of OceanBase, ranked by the same BM25 as the SQLite store (store/core/bm25.py).

Receipts must select the same memories, in the same order, on every backend, so the ranking cannot
be the database's own relevance function: OceanBase's FULLTEXT parsers also drop one-character terms
(measured: ``a``, ``1`` and single CJK characters are never found) and split differently from the
Python tokenizer that produced the terms. Instead each indexed document keeps its exact term
postings (term frequency per column) and token count, and ranking hands them to the shared formula
(core/bm25.py), with ``N``, ``n(t)`` and ``avgdl`` over the searched Scope's documents only, as the SQLite
store's per-Scope FTS5 tables keep them (core/fulltext.py: no other Scope's content may move a Scope's
ranking); ``N`` and the token total count every document ever added to the Scope (``fts_scope_totals``), as a
contentless-delete FTS5 table does.

Postings are stored packed: one ``fts_segments`` row per (index, scope tag, term, segment) holds the
segment's postings as a little-endian array of (doc id, tf1, tf2, |d|) records, decoded with NumPy.
A search reads every input of the formula in one statement (the Scope's totals and its posting arrays,
whose sizes are the terms' document counts) and scores in NumPy with the same float64 operations in the same
order as on SQLite, so scores agree to the last bit. Measured on embedded
seekdb at 10,000 memories (docs/oceanbase.md): one row per posting cost ~35 ms per search in two
statements that scan and join every posting of the query terms; packed segments ship the same
postings in one statement.

Each write transaction adds one new segment per (index, scope tag, term) it touches, numbered from a
per-index sequence, without reading anything back. When a term reaches ``MAX_SEGMENTS`` open segments
a write compacts them into full segments of ``SEGMENT_POSTINGS`` (sealed: never compacted again) and
one open rest, so a search reads a bounded number of rows per term per ``SEGMENT_POSTINGS`` postings,
and compacting never rewrites more than the open postings of a term.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from powercontext.store.core.bm25 import Window
from powercontext.store.core.packed import group_postings, indexed_doc
from powercontext.store.oceanbase import bm25, native_fulltext
from powercontext.store.oceanbase.postings import MAX_SEGMENTS, TABLES, SegmentCounts, posting_term
from powercontext.store.oceanbase.segments import add_documents, add_totals, bump_totals, remove_documents

if TYPE_CHECKING:
    from powercontext.store.oceanbase.dialect import Connection


class FtsWriter:
    """The OceanBase store's ``FullTextIndex`` (core/fulltext.py): keeps ``fts_docs``, ``fts_segments`` and
    ``fts_totals`` in step with the index writes of the shared code, and ranks the Scope's postings.

    Additions and removals are buffered and written by ``flush`` just before the transaction commits,
    a fixed handful of multi-row statements per transaction whatever its size (measured on seekdb:
    every statement is a round trip of 0.2-0.8 ms, and re-updating one row per document cost 4.5 ms
    each). Only the store's single writer session calls it, under the write lock.
    """

    def __init__(self) -> None:
        # (table, doc) -> (scope tag, tokens, term frequencies per text column)
        self._docs: dict[tuple[str, int], tuple[str, int, tuple[Counter[str], ...]]] = {}
        # Set when the database has the engine's FULLTEXT index (native_fulltext.py), which is kept in step.
        self.native = False
        self._native_docs: dict[tuple[str, int], tuple[str, str]] = {}  # (table, doc) -> (scope tag, body)
        self._removed: set[tuple[str, int]] = set()  # stored documents to take out of the index
        self._totals: Counter[tuple[str, str]] = Counter()  # (table, "docs" | "tokens")
        self._scope_totals: dict[tuple[str, str], tuple[int, int]] = {}  # (table, scope tag) -> (docs, tokens)
        self.segments = SegmentCounts(MAX_SEGMENTS)
        self._numbers: dict[str, int] = {}  # index -> this transaction's segment number

    def add(self, conn: Connection, table: str, doc_id: int, scope_tag: str, texts: Sequence[str]) -> None:
        spec = TABLES[table]
        scope_tag, tokens, tf = indexed_doc(scope_tag, texts)
        self._docs[(table, doc_id)] = (scope_tag, tokens, tf)
        if self.native:
            self._native_docs[(table, doc_id)] = (scope_tag, native_fulltext.body(spec.weights, texts))
        self._totals[(table, "docs")] += 1
        self._totals[(table, "tokens")] += tokens
        docs, total = self._scope_totals.get((table, scope_tag), (0, 0))
        self._scope_totals[(table, scope_tag)] = (docs + 1, total + tokens)

    def remove(self, conn: Connection, table: str, doc_id: int, scope_tag: str) -> None:
        self._native_docs.pop((table, doc_id), None)
        if self._docs.pop((table, doc_id), None) is not None:
            # Added earlier in this transaction, after any stored version was queued for removal.
            return
        self._removed.add((table, doc_id))
        # fts_totals is left alone on purpose: an FTS5 table with contentless_delete=1 never lowers its
        # row count or token totals on DELETE (measured: 3 rows, delete one, the averages record still
        # says 3), and BM25 must divide by the same numbers here.

    def flush(self, conn: Connection) -> None:
        """Write the buffered removals, then additions (inside the transaction, before COMMIT)."""
        if self._removed:
            remove_documents(conn, sorted(self._removed))
        # Grouped first: a writer that defers its statements (dialect.py) is still sending the earlier
        # ones, and a read below waits for them.
        grouped = group_postings(self._docs) if self._docs else {}
        # The totals grow only by additions; the same statement numbers this transaction's segments, unless
        # ``reserve`` took the number already.
        numbers = self._numbers
        for table in sorted({table for table, _ in self._totals}):
            docs, tokens = self._totals[(table, "docs")], self._totals[(table, "tokens")]
            if table in numbers:
                add_totals(conn, table, docs, tokens)
            else:
                numbers[table] = bump_totals(conn, table, docs, tokens)
        if self._docs:
            add_documents(conn, self._docs, grouped, self.segments, numbers)
        conn.insert_rows(
            "INSERT INTO fts_scope_totals (fts_table, scope_tag, docs, tokens) VALUES ",
            [(table, tag, docs, tokens) for (table, tag), (docs, tokens) in sorted(self._scope_totals.items())],
            " ON DUPLICATE KEY UPDATE docs = docs + VALUES(docs), tokens = tokens + VALUES(tokens)",
        )
        if self.native:
            added = [(table, doc, tag, text) for (table, doc), (tag, text) in self._native_docs.items()]
            native_fulltext.write(conn, sorted(self._removed), added)
        self.discard()

    def ranked(
        self,
        conn: Connection,
        table: str,
        scope_tag: str,
        terms: Sequence[str],
        limit: int,
        window: Window = "rank",
        window_size: int = 0,
    ) -> list[tuple[float, int]]:
        """(score, doc_id) best first: the engine's FULLTEXT index on a native database, else exact BM25."""
        if self.native:
            # The engine ranks every match itself: no window is needed to bound the work.
            return native_fulltext.search(conn, table, scope_tag, terms, min(limit, 1 << 16))
        return bm25.search(conn, table, scope_tag, terms, limit, window, window_size, self.segments)

    def holders(self, conn: Connection, table: str, scope_tag: str, terms: Sequence[str], limit: int) -> list[int]:
        """Packed postings as on SQLite; on a native database the engine's own ranking of the same terms (it
        keeps no postings this store could count)."""
        if self.native:
            return [doc for _, doc in native_fulltext.search(conn, table, scope_tag, terms, limit)]
        return bm25.holders_of(conn, table, scope_tag, terms, limit, self.segments)

    def documents(self, conn: Connection, table: str, scope_tag: str, terms: Sequence[str]) -> dict[str, int]:
        docs = bm25.term_documents(conn, table, scope_tag, terms)
        return {term: docs[posting_term(term)] for term in terms if posting_term(term) in docs}

    def forget_scope(self, conn: Connection, scope_tag: str) -> None:
        """Drop every index's postings, documents and totals of one Scope (its deletion)."""
        for table in ("fts_segments", "fts_docs", "fts_scope_totals"):
            conn.execute(f"DELETE FROM {table} WHERE scope_tag = ?", (scope_tag,))

    def reserve(self, conn: Connection, table: str) -> None:
        """Take ``table``'s segment number for this transaction now, while nothing is being sent: a writer that
        defers its statements then never waits for them in ``flush`` to read it (unless segments are due for
        compaction)."""
        if table not in self._numbers:
            self._numbers[table] = bump_totals(conn, table, 0, 0)

    def discard(self) -> None:
        """Forget the buffered changes (the transaction rolled back, or they were flushed)."""
        self._numbers.clear()
        self._docs.clear()
        self._native_docs.clear()
        self._removed.clear()
        self._totals.clear()
        self._scope_totals.clear()
