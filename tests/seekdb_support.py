"""Embedded seekdb for the test session: one engine instance, a fresh database state per test.

Opening the engine takes ~2 s and ~300 MB of disk, and creating the schema ~1-3 s, so the session
opens one instance in a temporary directory and one contract database in it; a test that asks for a
new store directory gets that database emptied (rows deleted, schema kept) instead of a new one.

A new engine directory costs ~6 s of CPU in its first ten seconds (the engine bootstraps its own system
tablets in the background); one that was bootstrapped before and closed costs ~2 s to open. So a run
bootstraps one template directory, which its xdist workers share (``share_one_template``), and every engine
directory a test or a Server needs is a copy of it (``new_engine_dir``): the engines are what the suite
spends most CPU on (a quarter to a third, measured).

The template stays open until the engine has finished its first start (``_settle``): a copy of a directory
closed in the middle of that work redoes it: ~8 s of the engine's CPU from opening to 30 s later, where a copy
of a settled one costs ~2.5 s (measured on the 2-core machine). A run that holds any seekdb test makes the
template and the contract database on a thread while the tests that need no engine run
(``warm_up_in_background``), so nobody waits for the settling.

If the engine cannot start, ``seekdb_unavailable()`` gives the exact reason; the test run prints it
as "skipped: <reason>", and under CI (``CI`` set) that is an error: an untested backend is unsupported.
"""

from __future__ import annotations

import atexit
import fcntl
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from powercontext.store.location import StoreLocation
from tests.ci import unavailable

if TYPE_CHECKING:
    from powercontext.store.oceanbase.store import OceanBaseStore

_TABLES_KEPT = {"schema_migrations", "store_locks"}
_RUN_DIRECTORY = "POWERCONTEXT_TEST_SEEKDB_RUN"  # set by share_one_template
_current_dir: list[Path] = []
_created: dict[str, StoreLocation] = {}  # open_emptied's databases, by name


@cache
def engine_dir() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="pc-seekdb-"))
    atexit.register(shutil.rmtree, directory, True)
    return directory


_warm_up: list[threading.Thread] = []


def warm_up_in_background() -> None:
    """Make the template and open the contract database on a thread; the first test that needs either waits
    for it there (``_after_warm_up``) instead of making its own."""
    if not _warm_up:
        _warm_up.append(threading.Thread(target=_probe, name="seekdb-warm-up", daemon=True))
        _warm_up[0].start()


def may_use_seekdb(items: list[pytest.Item]) -> bool:
    """Whether any of ``items`` may need this module's engine: a ``seekdb`` parameter, or a file that uses this
    module (``seekdb_server_cases.py``, run by a nested pytest, starts an engine server of its own)."""
    if any("seekdb" in getattr(getattr(item, "callspec", None), "id", "") for item in items):
        return True
    return any("seekdb_support" in path.read_text(encoding="utf-8") for path in {item.path for item in items})


def _after_warm_up() -> None:
    if _warm_up and _warm_up[0] is not threading.current_thread():
        _warm_up[0].join()


@cache
def _template() -> Path:
    """A bootstrapped, settled engine directory that no engine has open: what ``new_engine_dir`` copies.

    One per run: the first process to need it makes it in the run's directory (``share_one_template``) while
    the others wait for the lock, then copy it too."""
    shared = Path(os.environ.get(_RUN_DIRECTORY) or engine_dir())
    with (shared / "template.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        template = shared / "template"
        if not template.is_dir():
            _make_template(shared).rename(template)
    return template


def _make_template(parent: Path) -> Path:
    import pylibseekdb

    directory = Path(tempfile.mkdtemp(prefix="template-", dir=parent))  # a failed try leaves no half-made one
    instance = pylibseekdb.open(str(directory))
    _settle(directory)
    instance.close()
    return directory


def share_one_template() -> Callable[[], None]:
    """Give the run's processes (the xdist workers inherit the environment) one directory to share the template
    in; returns what removes it, for the end of the run. A template costs ~8 s of CPU to make and settle."""
    directory = tempfile.mkdtemp(prefix="pc-seekdb-run-")
    os.environ[_RUN_DIRECTORY] = directory
    return lambda: shutil.rmtree(directory, ignore_errors=True)


def _settle(directory: Path, least_s: float = 8.0, most_s: float = 20.0) -> None:
    """Wait until the engine serving ``directory`` has done its first start's background work: at least
    ``least_s`` after it opened (it rests for ~1 s between two bursts, the second at ~4-6 s) and quiet
    (under 0.1 s of CPU) for the last second. Measured on the 2-core machine: done by ~6 s when idle."""
    engine = _engine_process(directory)
    started = time.monotonic()
    busy = _cpu_seconds(engine)
    while time.monotonic() - started < most_s:
        time.sleep(1.0)
        before, busy = busy, _cpu_seconds(engine)
        if time.monotonic() - started >= least_s and busy - before < 0.1:
            return


def _engine_process(directory: Path) -> str | None:
    """The pid of this process's engine child serving ``directory`` (its command line names the directory)."""
    me, wanted = str(os.getpid()), f"--base-dir={directory}".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if _stat_fields(pid)[1] == me and wanted in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
        except (OSError, IndexError):
            continue
    return None


def _cpu_seconds(pid: str | None) -> float:
    """User and system CPU of ``pid`` (0.0 once it is gone, or when there is no such process)."""
    if pid is None:
        return 0.0
    try:
        fields = _stat_fields(pid)
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError):
        return 0.0


def _stat_fields(pid: str) -> list[str]:
    """``/proc/<pid>/stat`` after the command name, which may itself hold spaces and parentheses."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def engine_socket(pid: int) -> dict[str, str]:
    """pymysql options for the embedded engine that process ``pid`` opened (its private unix socket)."""
    sockets = glob.glob(f"{tempfile.gettempdir()}/pylibseekdb-uds-{pid}-*/run/sql.sock")
    assert len(sockets) == 1, f"the engine socket of process {pid} was not found: {sockets}"
    return {"unix_socket": sockets[0], "user": "root"}


def outside_engine_storage(paths: list[str]) -> list[str]:
    """The paths that are not the engine's own log (``redo/``) or data file (``sstable/``). A deletion on seekdb is
    a new version of the row: the old bytes stay in the log, and in the data file when the engine dumped its memory
    there before the deletion, until it reuses that space (docs/operations.md, "Purge"); nothing else may hold them."""
    return [path for path in paths if not any(part in f"/{path}" for part in ("/redo/", "/sstable/"))]


def store_copy(source: str, target: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``powercontext store copy --from source --to target`` as a user runs it (a forked console script)."""
    from tests import forked

    command = [sys.executable, "-m", "powercontext", "store", "copy", "--from", source, "--to", target]
    return forked.run(command, capture_output=True, text=True, timeout=timeout)


def new_engine_dir(parent: Path, name: str = "engine") -> Path:
    """``parent / name``: a new engine directory, bootstrapped already (a copy of the run's template).

    The engine opens it as it opens a directory of its own from an earlier start: it holds no database of
    ours yet, so a Server or ``store copy`` still creates the database and its schema there."""
    _after_warm_up()
    target = parent / name
    shutil.copytree(_template(), target, symlinks=True)
    return target


@cache
def _contract_engine() -> Path:
    return new_engine_dir(engine_dir())


def location(database: str = "contract") -> StoreLocation:
    _after_warm_up()
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


def seekdb_unavailable() -> str | None:
    """None when the engine opens and serves the schema; else the exact reason it does not."""
    _after_warm_up()
    return _probe()


@cache
def _probe() -> str | None:
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
    unavailable(message)


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
