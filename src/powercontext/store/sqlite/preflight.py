"""What the SQLite store checks before it writes anything to its file: a store that cannot work is refused at
start with one line that says what is wrong and what to do, and the file is left as it was.

Cheap checks only, since a Server opens its store at every start: the file's header (is it SQLite, is it as
long as the header says), whether its file, directory and file system can be written, its schema version, and,
for a file small enough to read in well under a second, SQLite's own ``quick_check``. A larger file is checked
in the background once the Server runs (``integrity.BackgroundIntegrity``), and readiness reports the result.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from powercontext.store.errors import SchemaTooNew, StoreOpenRefused
from powercontext.store.faults import fault_kind

_HEADER = b"SQLite format 3\x00"
# quick_check reads every page: ~0.1-0.3 s for 32 MiB on the 2-core machine, so a store this small is checked
# before the Server answers; a larger one in the background.
CHECK_AT_START_MAX_BYTES = 32 * 1024 * 1024
_RESTORE = "restore it from a backup (docs/operations.md, Backup), or move it away to start a new store"


def check_file(path: Path) -> None:
    """Refuse a file that cannot be the store, reading only. A missing file is fine if it can be created."""
    if not path.exists():
        parent = _existing_ancestor(path.parent)
        if not parent.is_dir():  # a file where a directory on the way should be: it cannot be made
            raise StoreOpenRefused(
                f"{path} cannot be created: {parent} is a file, not a directory; choose another store with --store"
            )
        if not os.access(parent, os.W_OK):
            raise StoreOpenRefused(f"{path} cannot be created: {_not_writable(parent)}; {_MAKE_WRITABLE}")
        return
    if path.is_dir():
        raise StoreOpenRefused(f"{path} is a directory, not a store file; name a file with --store sqlite:///path")
    try:
        with path.open("rb") as handle:
            header = handle.read(100)
    except PermissionError:
        raise StoreOpenRefused(f"{path} cannot be read by this user; {_MAKE_WRITABLE}") from None
    size = path.stat().st_size
    if size:
        _check_header(path, header, size)
    for target in (path, path.parent):
        if not os.access(target, os.W_OK):
            raise StoreOpenRefused(f"{path} cannot be written: {_not_writable(target)}; {_MAKE_WRITABLE}")


_MAKE_WRITABLE = "make it writable by the Server's user (or mount it read-write), or choose another store with --store"


def _check_header(path: Path, header: bytes, size: int) -> None:
    if len(header) < 100 or not header.startswith(_HEADER):
        raise StoreOpenRefused(
            f"{path} is not a PowerContext store (it is not a SQLite database); point --store at the store's file,"
            " or move this one away to start a new store"
        )
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    counter_valid = header[24:28] == header[92:96]  # the header's page count is current (SQLite file format)
    wal = path.with_name(path.name + "-wal")
    expected = pages * page_size
    if counter_valid and pages and size < expected and not wal.exists():
        raise StoreOpenRefused(f"{path} is truncated ({size:,} of {expected:,} bytes); {_RESTORE}")


def check_open(conn: Any, path: Path, latest: int) -> None:
    """On the opened connection, before anything is written: the schema version, and a small file's pages."""
    try:
        row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").fetchone()
        if row is not None:
            newest = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
            if newest is not None and int(newest) > latest:
                raise SchemaTooNew(
                    f"{path} was written by a newer PowerContext (schema version {newest}; this one knows up to"
                    f" {latest}); upgrade PowerContext (pip install -U powercontext), or choose another store"
                )
        if path.exists() and path.stat().st_size <= CHECK_AT_START_MAX_BYTES:
            verdict = " ".join(str(conn.execute("PRAGMA quick_check(1)").fetchone()[0]).split())  # one line
            if verdict != "ok":
                raise StoreOpenRefused(f"{path} is damaged (SQLite's integrity check: {verdict}); {_RESTORE}")
    except StoreOpenRefused:
        raise
    except Exception as exc:
        raise refusal(exc, path) from exc


def refusal(exc: BaseException, path: Path) -> StoreOpenRefused | BaseException:
    """The start-up refusal for an error met while opening ``path``, or ``exc`` itself if it says nothing known."""
    kind = fault_kind(exc)
    if kind is None:
        return exc
    if kind.cause == "corrupt":
        return StoreOpenRefused(f"{path} is damaged or not a SQLite database ({kind.describe}); {_RESTORE}")
    if kind.cause == "read-only":
        return StoreOpenRefused(f"{path} cannot be written ({kind.describe}); {_MAKE_WRITABLE}")
    return StoreOpenRefused(f"{path} cannot be opened ({kind.describe}); {kind.remedy}")


def _existing_ancestor(directory: Path) -> Path:
    while not directory.exists() and directory != directory.parent:
        directory = directory.parent
    return directory


def _not_writable(target: Path) -> str:
    try:
        read_only_mount = bool(os.statvfs(target).f_flag & os.ST_RDONLY)
    except OSError:
        read_only_mount = False
    if read_only_mount:
        return f"{target} is on a file system mounted read-only"
    kind = "directory" if target.is_dir() else "file"
    return f"the {kind} {target} is read-only for this user"
