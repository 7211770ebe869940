"""Which storage fault a driver error is: disk full, read-only, I/O error or a damaged file, on both stores.

The SQLite driver gives a result code (``sqlite_errorcode``; its low byte is the primary code); seekdb and
OceanBase give a MySQL-protocol error number, kept as the ``__cause__`` of the SQLite-family error the OceanBase
connection raises (``oceanbase/dialect.py``). Anything else is not a storage fault and is left to the caller.
"""

from __future__ import annotations

from powercontext.store.errors import StorageFault, StoreCorrupt, StoreFull, StoreIOError, StoreReadOnly

# SQLite primary result codes (https://sqlite.org/rescode.html).
_SQLITE = {
    13: StoreFull,  # SQLITE_FULL
    8: StoreReadOnly,  # SQLITE_READONLY
    3: StoreReadOnly,  # SQLITE_PERM
    10: StoreIOError,  # SQLITE_IOERR
    11: StoreCorrupt,  # SQLITE_CORRUPT
    26: StoreCorrupt,  # SQLITE_NOTADB
}
# MySQL-protocol error numbers: MySQL's and OceanBase's own (OceanBase answers its internal code as the number).
_MYSQL: dict[int, type[StorageFault]] = {
    1021: StoreFull,  # ER_DISK_FULL
    1114: StoreFull,  # ER_RECORD_FILE_FULL
    4184: StoreFull,  # OB_CS_OUTOF_DISK_SPACE
    4264: StoreFull,  # OB_LOG_OUTOF_DISK_SPACE
    1290: StoreReadOnly,  # ER_OPTION_PREVENTS_STATEMENT (read_only)
    1036: StoreReadOnly,  # ER_OPEN_AS_READONLY
    1836: StoreReadOnly,  # ER_READ_ONLY_MODE
    1030: StoreIOError,  # ER_GET_ERRNO (the storage engine's error)
    4009: StoreIOError,  # OB_IO_ERROR
    6325: StoreIOError,  # "ob clog disk hang": the engine's log writes are stuck (a full disk is one cause)
    4103: StoreCorrupt,  # OB_CHECKSUM_ERROR
}


def mysql_error_number(exc: BaseException) -> int | None:
    """The MySQL-protocol error number of ``exc`` or of the pymysql error it was raised from, or None."""
    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            return None
        args = getattr(seen, "args", ())
        if type(seen).__module__.startswith("pymysql") and args and isinstance(args[0], int):
            return args[0]
        seen = seen.__cause__ or seen.__context__
    return None


def fault_kind(exc: BaseException) -> type[StorageFault] | None:
    """The storage fault ``exc`` (or an error it was raised from) reports, or None."""
    seen: BaseException | None = exc
    for _ in range(4):  # the error, and the driver errors it wraps
        if seen is None:
            return None
        code = getattr(seen, "sqlite_errorcode", None)
        if isinstance(code, int) and code & 0xFF in _SQLITE:
            return _SQLITE[code & 0xFF]
        args = getattr(seen, "args", ())
        if type(seen).__module__.startswith("pymysql") and args and isinstance(args[0], int) and args[0] in _MYSQL:
            return _MYSQL[args[0]]
        seen = seen.__cause__ or seen.__context__
    return None


def storage_fault(exc: BaseException, operation: str) -> StorageFault | None:
    """The client-facing error for a storage fault met during ``operation`` (``write`` or ``read``), or None."""
    kind = fault_kind(exc)
    return kind(operation) if kind is not None else None
