"""Embedded seekdb for the test session: one engine instance, a fresh database state per test.

Opening the engine takes ~2 s and ~300 MB of disk, and creating the schema ~1-3 s, so the session
opens one instance in a temporary directory and one contract database in it; a test that asks for a
new store directory gets that database emptied (rows deleted, schema kept) instead of a new one.

A new engine directory costs ~6 s of CPU in its first ten seconds (the engine bootstraps its own system
tablets in the background); one that was bootstrapped before and closed costs ~2 s to open. So each
process bootstraps one template directory, and every engine directory a test or a Server needs is a copy
of it (``new_engine_dir``): the engines are what the suite spends most CPU on (a third, measured).

If the engine cannot start, ``seekdb_unavailable()`` gives the exact reason; the test run prints it
as "skipped: <reason>", and under CI (``CI`` set) that is an error: an untested backend is unsupported.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from powercontext.store.location import StoreLocation

if TYPE_CHECKING:
    from powercontext.store.oceanbase.store import OceanBaseStore

_TABLES_KEPT = {"schema_migrations", "store_locks"}
_current_dir: list[Path] = []
_created: dict[str, StoreLocation] = {}  # open_emptied's databases, by name


@cache
def engine_dir() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="pc-seekdb-"))
    atexit.register(shutil.rmtree, directory, True)
    return directory


@cache
def _template() -> Path:
    """A bootstrapped engine directory that no engine has open: what ``new_engine_dir`` copies."""
    import pylibseekdb

    directory = engine_dir() / "template"
    pylibseekdb.open(str(directory)).close()
    return directory


def new_engine_dir(parent: Path, name: str = "engine") -> Path:
    """``parent / name``: a new engine directory, bootstrapped already (a copy of the process's template).

    The engine opens it as it opens a directory of its own from an earlier start: it holds no database of
    ours yet, so a Server or ``store copy`` still creates the database and its schema there."""
    target = parent / name
    shutil.copytree(_template(), target, symlinks=True)
    return target


@cache
def _contract_engine() -> Path:
    return new_engine_dir(engine_dir())


def location(database: str = "contract") -> StoreLocation:
    return StoreLocation("seekdb", path=_contract_engine(), database=database)


def fresh_location(database: str, fulltext: str = "exact", vectors: str = "exact") -> StoreLocation:
    """A new, empty database on the session's engine (dropped first if a previous test left it), with the
    store URL options ``fulltext`` and ``vectors``."""
    from powercontext.store.oceanbase.engine import execute_alone

    base = location(database)
    execute_alone(base, f"DROP DATABASE IF EXISTS `{base.database}`")
    return StoreLocation(
        "seekdb",
        path=base.path,
        database=database,
        fulltext=fulltext,  # type: ignore[arg-type]
        vectors=vectors,  # type: ignore[arg-type]
    )


def open_seekdb(where: StoreLocation) -> OceanBaseStore:
    from powercontext.store.oceanbase.store import OceanBaseStore

    return OceanBaseStore(where)


@cache
def seekdb_unavailable() -> str | None:
    """None when the engine opens and serves the schema; else the exact reason it does not."""
    try:
        from powercontext.store.oceanbase.store import OceanBaseStore  # pymysql may be missing: that is a reason too

        OceanBaseStore(location()).close()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def require_seekdb() -> None:
    """Skip (or, under CI, fail) a test that needs the engine when it cannot start."""
    reason = seekdb_unavailable()
    if reason is None:
        return
    message = f"skipped: embedded seekdb cannot start: {reason}"
    print(message)
    if os.environ.get("CI"):
        pytest.fail(message + " (CI runs every backend)", pytrace=False)
    pytest.skip(message)


def seekdb_store(directory: Path) -> OceanBaseStore:
    """A store on the session's contract database; emptied the first time ``directory`` is seen."""
    require_seekdb()
    from powercontext.store.oceanbase.store import OceanBaseStore

    store = OceanBaseStore(location())
    if not _current_dir or _current_dir[0] != directory:
        _current_dir[:] = [directory]
        _delete_rows(store)
    return store


def open_emptied(database: str, fulltext: str = "exact", vectors: str = "exact") -> OceanBaseStore:
    """A store on ``database`` with no rows: the process's first call creates it (``fresh_location``), each
    later one deletes its rows and keeps its schema. Dropping and creating a database with its FULLTEXT or
    vector indexes costs the engine ~5 s of CPU; a test that is not about creating one needs only it empty."""
    where = _created.get(database)
    if where is None:
        where = _created[database] = fresh_location(database, fulltext, vectors)
        return open_seekdb(where)
    store = open_seekdb(where)
    _delete_rows(store)
    return store


def _delete_rows(store: OceanBaseStore) -> None:
    conn = store._writer
    tables = [row[0] for row in conn.query("SHOW TABLES").fetchall() if row[0] not in _TABLES_KEPT]
    for table in tables:
        conn.query(f"DELETE FROM `{table}`")
    conn.raw.commit()
