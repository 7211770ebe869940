"""The embedded default store: one SQLite file, WAL, FTS5.

``SqliteStore`` is loaded on first use (PEP 562), so importing a submodule of this package never imports the
store back: the package and its modules form no import cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from powercontext.store.sqlite.store import SqliteStore

__all__ = ["SqliteStore"]


def __getattr__(name: str) -> Any:
    if name == "SqliteStore":
        from powercontext.store.sqlite.store import SqliteStore

        return SqliteStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
