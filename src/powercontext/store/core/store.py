"""``SqlStore``: everything both stores do the same way, statement for statement.

A concrete store (``sqlite.store.SqliteStore``, ``oceanbase.store.OceanBaseStore``) inherits this class and
supplies only what differs between the engines: its connections (``_reader``, the serialized ``_write``
transaction, its driver's errors and how its writer closes; ``connections.ConnectionPool`` keeps the rest), its
full-text index (``_fulltext``, a ``core.fulltext.FullTextIndex``: every family's index writes and searches go
through it) and how it finds vector hits (``_vector_hits``). The statements here are written once, in the store's
portable SQL: ``?`` placeholders and ``INSERT … ON CONFLICT … DO UPDATE``; a connection runs them in its dialect.
Neither store inherits the other.
"""

from __future__ import annotations

from powercontext.store.core.code_index import CodeIndex
from powercontext.store.core.connections import ConnectionPool
from powercontext.store.core.embeddings import Embeddings
from powercontext.store.core.families import Families
from powercontext.store.core.memory_review import MemoryReview
from powercontext.store.core.memory_writes import MemoryWrites
from powercontext.store.core.scope_delete import ScopeDeletion
from powercontext.store.core.scopes import Scopes
from powercontext.store.core.text_search import TextSearch

__all__ = ["SqlStore"]


class SqlStore(
    TextSearch, Scopes, MemoryReview, MemoryWrites, ScopeDeletion, Embeddings, Families, CodeIndex, ConnectionPool
):
    """The shared part of ``Store``, ``FamilyStore``, ``PromptStore``, ``SourceStore`` and ``CodeStore`` (see the
    module doc)."""
