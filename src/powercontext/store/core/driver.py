"""The SQLite driver (the bundled build, 3.51, extension loading, where its wheel exists), and through it the
store-wide error family: the OceanBase connection raises its ``IntegrityError``/``OperationalError`` too, so the
core catches one family on every backend."""

from __future__ import annotations

from types import ModuleType
from typing import cast


def load_driver() -> ModuleType:
    try:
        from pysqlite3 import dbapi2

        return cast(ModuleType, dbapi2)
    except ImportError:  # platforms without a pysqlite3-binary wheel fall back to the stdlib build
        import sqlite3

        return sqlite3


sqlite = load_driver()
