"""Which of the engine's native indexes a database uses: chosen when the database is created, kept by it.

A native index must be maintained by every writer of the database, so the choice cannot be one process's
setting. It is a row of the writer-lock table (``store_locks``), which every write transaction locks anyway
(store.py ``_write``): each writer learns the mode with no extra round trip, even a process that started before
another one created the index. A URL option only creates the mark, and only on a database that holds no data of
that kind yet (an index built later would miss what was written before); switching is a ``store copy``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from powercontext.store.oceanbase.engine import EngineUnavailable

if TYPE_CHECKING:
    from powercontext.store.oceanbase.dialect import Connection


class NativeModeConflict(EngineUnavailable):
    """A native index was asked of a database that already holds data it would have to cover."""


def claim(
    conn: Connection, *, mark: str, requested: bool, ddl: str, holds_data: str, option: str, display: str
) -> bool:
    """Whether the database carries ``mark``; when ``requested`` on a database without data, create it.

    ``ddl`` runs first (DDL commits on its own; after a refusal the empty table stays unused), then the mark is
    written under the writer lock, so no write of another process can slip between the ``holds_data`` check
    (a query that returns a row when there is data) and the mark.
    """
    if conn.query("SELECT 1 FROM store_locks WHERE name = %s", (mark,)).fetchone() is not None:
        return True
    if not requested:
        return False
    if ddl:
        conn.query(ddl)
    conn.raw.begin()
    try:
        conn.query("SELECT name FROM store_locks WHERE name = 'writer' FOR UPDATE")
        if conn.query(holds_data).fetchone() is not None:
            raise NativeModeConflict(
                f"{display} already holds data, and ?{option} applies only to a new database: copy this one into"
                f" a new database instead, e.g. powercontext store copy --from <this URL> --to '<new URL>?{option}'"
            )
        conn.query("INSERT IGNORE INTO store_locks (name) VALUES (%s)", (mark,))
        conn.raw.commit()
    except BaseException:
        conn.raw.rollback()
        raise
    return True
