"""``server run`` on a store that cannot work: one line saying what is wrong and what to do, exit code 6
(docs/cli.md), no traceback, no banner, and the file left byte for byte as it was.

The read-only cases run as a user without root's permission override (``setpriv`` to ``nobody`` when the tests
run as root, as in CI), and the read-only mount in a mount namespace of its own (``unshare -m``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import forked
from tests.faults.support import server_env
from tests.support import free_port

REFUSED = 6
NOBODY = 65534


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_store(path: Path, memories: int = 0) -> None:
    """A real store file, closed cleanly, with ``memories`` artifact rows (so that its pages hold data)."""
    from pysqlite3 import dbapi2

    from powercontext.store.sqlite import SqliteStore

    SqliteStore(path).close()
    conn = dbapi2.connect(str(path))
    conn.execute("INSERT INTO scopes VALUES ('s', 't', '[]', '2026-01-01', '2026-01-01')")
    for n in range(memories):
        conn.execute(
            "INSERT INTO artifacts (scope_id, family, artifact_id, head_revision, state, created_at, updated_at)"
            " VALUES ('s', 'atomic-memory', ?, 1, 'active', '2026-01-01', '2026-01-01')",
            (f"am_{n:016d}",),
        )
    conn.commit()
    conn.execute("PRAGMA journal_mode = DELETE")  # one file, as a stopped Server leaves it
    conn.close()


def run_server(store: str, prefix: tuple[str, ...] = (), home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``server run`` on ``store``; with ``prefix`` (another user, a mount namespace) as a new process, whose home
    is ``home`` when given: another user has a data directory of its own, not root's."""
    args = ["server", "run", "--port", str(free_port()), "--store", store]
    if not prefix:
        return forked.run([*forked.POWERCONTEXT, *args], timeout=120, env=server_env())
    env = server_env()
    if home is not None:
        env.pop("XDG_DATA_HOME", None)
        env["HOME"] = str(home)
    return subprocess.run(
        [*prefix, sys.executable, "-m", "powercontext", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def assert_refused(result: subprocess.CompletedProcess[str], says: str, label: str = "--store") -> None:
    """One line naming ``label``, the option or variable that named the store (``run_server`` passes --store)."""
    assert result.returncode == REFUSED, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # no traceback, no banner
    assert lines[0].startswith(f"error: {label}: "), lines[0]
    assert says in lines[0], lines[0]


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory another user can reach (pytest's own temporary root is private to root)."""
    directory = Path(tempfile.mkdtemp(prefix="pc-faults-"))
    directory.chmod(0o755)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def as_non_root() -> tuple[str, ...]:
    if os.geteuid() != 0:
        return ()
    return ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups")


def test_random_bytes_are_refused(tmp_path: Path) -> None:
    store = tmp_path / "random.db"
    store.write_bytes(os.urandom(64 * 1024))
    before = sha256(store)
    assert_refused(run_server(f"sqlite://{store}"), "is not a PowerContext store")
    assert sha256(store) == before


def test_a_truncated_file_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "truncated.db"
    make_store(store, memories=200)
    with store.open("r+b") as handle:
        handle.truncate(store.stat().st_size // 2)
    before = sha256(store)
    assert_refused(run_server(f"sqlite://{store}"), "is truncated")
    assert sha256(store) == before


def test_a_file_with_one_corrupt_page_is_refused(tmp_path: Path) -> None:
    import sqlite3  # the standard library's build has the dbstat table, which says where a table's pages are

    store = tmp_path / "corrupt.db"
    make_store(store, memories=400)
    conn = sqlite3.connect(str(store))
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'artifacts'").fetchone()[0]
    leaf = conn.execute("SELECT max(pageno) FROM dbstat WHERE name = 'artifacts' AND pageno != ?", (root,)).fetchone()
    conn.close()
    with store.open("r+b") as handle:  # one page of the artifacts table, overwritten
        handle.seek((leaf[0] - 1) * page_size)
        handle.write(os.urandom(page_size))
    before = sha256(store)
    assert_refused(run_server(f"sqlite://{store}"), "is damaged")
    assert sha256(store) == before


def test_a_store_of_a_newer_schema_is_refused(tmp_path: Path) -> None:
    from pysqlite3 import dbapi2

    store = tmp_path / "newer.db"
    make_store(store)
    conn = dbapi2.connect(str(store))
    conn.execute("INSERT INTO schema_migrations VALUES (999, '2099-01-01')")
    conn.commit()
    conn.close()
    before = sha256(store)
    assert_refused(run_server(f"sqlite://{store}"), "newer PowerContext (schema version 999")
    assert sha256(store) == before


def test_a_read_only_file_is_refused_for_a_user_without_root_s_override(shared_dir: Path) -> None:
    store = shared_dir / "store" / "readonly.db"
    store.parent.mkdir()
    make_store(store)
    if os.geteuid() == 0:
        os.chown(store.parent, NOBODY, NOBODY)
        os.chown(store, NOBODY, NOBODY)
    store.chmod(0o444)
    before = sha256(store)
    assert_refused(run_server(f"sqlite://{store}", as_non_root(), shared_dir), "is read-only for this user")
    assert sha256(store) == before


def test_a_read_only_directory_is_refused(shared_dir: Path) -> None:
    store = shared_dir / "store" / "powercontext.db"
    store.parent.mkdir()
    make_store(store)
    if os.geteuid() == 0:
        os.chown(store, NOBODY, NOBODY)
    store.parent.chmod(0o555)
    before = sha256(store)
    said = f"the directory {store.parent} is read-only"
    assert_refused(run_server(f"sqlite://{store}", as_non_root(), shared_dir), said)
    assert sha256(store) == before
    assert sorted(p.name for p in store.parent.iterdir()) == ["powercontext.db"]


def test_a_read_only_mount_is_refused(tmp_path: Path) -> None:
    volume = tmp_path / "volume"
    volume.mkdir()
    store = volume / "powercontext.db"
    make_store(store)
    before = sha256(store)
    user_ns = () if os.geteuid() == 0 else ("-r",)
    mount_ro = f'mount --bind {volume} {volume} && mount -o remount,bind,ro {volume} && exec "$@"'
    prefix = ("unshare", *user_ns, "-m", "sh", "-c", mount_ro, "sh")
    assert_refused(run_server(f"sqlite://{store}", prefix), "is on a file system mounted read-only")
    assert sha256(store) == before


def test_a_seekdb_store_of_a_newer_schema_is_refused(tmp_path: Path) -> None:
    from tests.faults.support import store_url

    store = store_url("seekdb", tmp_path)
    from powercontext.settings import Settings
    from powercontext.store.oceanbase.store import OceanBaseStore

    location = Settings.from_env(store=store).store_location()
    opened = OceanBaseStore(location)  # created and migrated, then marked as written by a future version
    with opened._writer.raw.cursor() as cur:
        cur.execute("INSERT INTO schema_migrations (version, applied_at) VALUES (999, '2099-01-01')")
    opened._writer.raw.commit()
    opened.close()
    assert_refused(run_server(store), "newer PowerContext (schema version 999")


def test_memory_reindex_refuses_a_store_as_server_run_does(tmp_path: Path) -> None:
    # ``memory reindex`` opens the store itself: the same one line and exit code, not a traceback.
    store = tmp_path / "noise.db"
    store.write_bytes(os.urandom(8192))
    before = sha256(store)
    env = {**server_env(), "POWERCONTEXT_EMBEDDINGS": "local"}
    command = [*forked.POWERCONTEXT, "memory", "reindex", "--store", f"sqlite://{store}"]
    result = forked.run(command, timeout=120, env=env)
    assert_refused(result, "is not a PowerContext store", label="POWERCONTEXT_STORE")
    assert sha256(store) == before


def test_a_seekdb_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "sqlite.db"
    make_store(store)
    before = sha256(store)
    assert_refused(run_server(f"seekdb://{store}"), "is a file, not a seekdb directory")
    assert sha256(store) == before


def test_a_seekdb_directory_that_cannot_be_created_is_refused() -> None:
    assert_refused(run_server("seekdb:///proc/powercontext-nope"), "cannot create the seekdb directory")


@pytest.mark.parametrize("below", ["x.db", "deeper/x.db"])
def test_a_store_file_below_a_regular_file_is_refused(tmp_path: Path, below: str) -> None:
    # The directory the store would go in cannot be made: a file holds its name.
    blocker = tmp_path / "f"
    blocker.write_text("not a directory\n", encoding="utf-8")
    args = ["server", "run", "--port", str(free_port())]
    env = {**server_env(), "POWERCONTEXT_DB": str(blocker / below)}
    result = forked.run([*forked.POWERCONTEXT, *args], timeout=120, env=env)
    assert_refused(result, f"cannot be created: {blocker} is a file, not a directory", label="POWERCONTEXT_DB")
    assert blocker.read_text(encoding="utf-8") == "not a directory\n"


def test_the_store_variable_is_named_when_it_named_the_store(tmp_path: Path) -> None:
    store = tmp_path / "random.db"
    store.write_bytes(os.urandom(8192))
    args = ["server", "run", "--port", str(free_port())]
    result = forked.run(
        [*forked.POWERCONTEXT, *args], timeout=120, env={**server_env(), "POWERCONTEXT_STORE": f"sqlite://{store}"}
    )
    assert_refused(result, "is not a PowerContext store", label="POWERCONTEXT_STORE")


def test_native_fulltext_on_a_seekdb_store_with_data_names_the_option(tmp_path: Path) -> None:
    from tests.faults.support import store_url

    store = store_url("seekdb", tmp_path)
    from powercontext.settings import Settings
    from powercontext.store.oceanbase.store import OceanBaseStore

    opened = OceanBaseStore(Settings.from_env(store=store).store_location())
    with opened._writer.raw.cursor() as cur:  # one indexed document: the database holds data
        cur.execute("INSERT INTO fts_docs (fts_table, doc_id, scope_tag, ntokens) VALUES ('t', 1, 's', 1)")
    opened._writer.raw.commit()
    opened.close()
    result = run_server(f"{store}?fulltext=native")
    assert result.returncode == 2, result.stderr  # NativeModeConflict is told as a setting the engine refuses
    assert result.stderr.startswith("error: --store: ") and len(result.stderr.strip().splitlines()) == 1
    assert "already holds data, and ?fulltext=native applies only" in result.stderr
