"""The full-text index port: the only way any family's text reaches an index or a search.

Every family (Atomic Memory, Topic Memory, Experience, code) keeps one index per Scope, so BM25's statistics are
the Scope's own. The shared write code hands each document's index terms to ``FullTextIndex.add``/``remove``
inside its write transaction, and every search asks ``FullTextIndex.ranked`` for the Scope's best documents:
nothing recognises index writes by the text of a statement. Each store has one implementation (SQLite:
``sqlite.fulltext.Fts5Index``, FTS5 tables per Scope; OceanBase: ``oceanbase.fulltext.FtsWriter``, packed
postings), and both rank with the one BM25 of ``core.bm25``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from powercontext.contract.common import ArtifactFamily
from powercontext.store.core.bm25 import Window

__all__ = ["INDEXES", "FullTextIndex", "IndexSpec", "Window"]


@dataclass(frozen=True, slots=True)
class IndexSpec:
    """One full-text index: its name, the family whose heads it holds, its text columns and their BM25 weights."""

    name: str
    family: ArtifactFamily | None  # None: code chunks, not artifacts
    columns: tuple[str, ...]
    weights: tuple[float, ...]


INDEXES: Final = {
    spec.name: spec
    for spec in (
        IndexSpec("atomic_memory_fts", "atomic-memory", ("terms",), (1.0,)),
        # A title names the topic, so a title word says more about relevance than the same word in the body.
        IndexSpec("topic_memory_fts", "topic-memory", ("title", "body"), (2.0, 1.0)),
        IndexSpec("experience_fts", "experience", ("terms",), (1.0,)),
        # Path terms weigh more than body terms: a query naming a module should find that module first.
        IndexSpec("code_fts", None, ("path_terms", "terms"), (2.0, 1.0)),
    )
}


class FullTextIndex(Protocol):
    """A store's full-text index. ``index`` names an ``INDEXES`` entry; ``scope_tag`` the Scope (its tag)."""

    def add(self, conn: Any, index: str, doc_id: int, scope_tag: str, columns: Sequence[str]) -> None:
        """Make one document searchable, inside ``conn``'s write transaction.

        ``columns`` line up with the index's text columns; each is the document's index terms, space-separated.
        """
        ...

    def remove(self, conn: Any, index: str, doc_id: int, scope_tag: str) -> None:
        """Take one document out of the index, inside ``conn``'s write transaction."""
        ...

    def ranked(
        self,
        conn: Any,
        index: str,
        scope_tag: str,
        terms: Sequence[str],
        limit: int,
        window: Window = "rank",
        window_size: int = 0,
    ) -> list[tuple[float, int]]:
        """(score, doc id) of the Scope's documents matching any term, best BM25 first (ties: lower id first).

        ``window`` is the cut a search takes when ranking every match is unaffordable (``core.bm25.rank``).
        """
        ...

    def documents(self, conn: Any, index: str, scope_tag: str, terms: Sequence[str]) -> dict[str, int]:
        """How many of the Scope's documents hold each query term (terms found nowhere are left out)."""
        ...

    def holders(self, conn: Any, index: str, scope_tag: str, terms: Sequence[str], limit: int) -> list[int]:
        """Doc ids of the Scope's documents holding ``terms``, by the inverse document frequency of the terms each
        holds, then the latest written; at most ``limit`` (``core.bm25.holders``). For a few rare terms whose
        holders are wanted, not a BM25 ranking."""
        ...

    def forget_scope(self, conn: Any, scope_tag: str) -> None:
        """Drop every index's postings, documents and statistics of one Scope, inside ``conn``'s transaction."""
        ...
