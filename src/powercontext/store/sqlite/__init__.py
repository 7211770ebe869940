"""The embedded default store: one SQLite file, WAL, FTS5."""

from powercontext.store.sqlite.store import SqliteStore

__all__ = ["SqliteStore"]
