"""Open the store a location names: SQLite, embedded seekdb, or a seekdb/OceanBase server."""

from __future__ import annotations

from powercontext.store.base import Store
from powercontext.store.errors import StoreNotFound
from powercontext.store.location import StoreLocation


def open_store(location: StoreLocation, *, create: bool = True) -> Store:
    """The open store, schema created or migrated; raises ``EngineUnavailable`` when seekdb cannot start.

    With ``create=False`` a store must already be there (a SQLite file, a seekdb directory that is not empty,
    the database on the engine or server): otherwise ``StoreNotFound`` is raised and nothing is created. For a
    command that only reads or updates a store, where a new, empty one would only report an empty success.
    """
    if not create:
        require_existing(location)
    if location.backend == "sqlite":
        from powercontext.store.sqlite import SqliteStore

        assert location.path is not None
        return SqliteStore(location.path)
    from powercontext.store.oceanbase.engine import EngineUnavailable

    try:
        from powercontext.store.oceanbase.store import OceanBaseStore
    except ImportError as exc:  # the oceanbase extra is not installed
        raise EngineUnavailable(
            f"{location.backend} stores need the oceanbase extra: pip install 'powercontext[oceanbase]'"
        ) from exc
    return OceanBaseStore(location, create=create)


def require_existing(location: StoreLocation) -> None:
    """Raise ``StoreNotFound`` unless a local store's file or directory is there (an OceanBase server's database
    is looked up when the store opens)."""
    path = location.path
    if location.backend == "sqlite":
        assert path is not None
        if not path.exists():
            raise StoreNotFound(location.display())
    elif location.backend == "seekdb":
        assert path is not None
        if not path.is_dir() or not any(path.iterdir()):  # an empty directory: the engine would start a new one
            raise StoreNotFound(location.display())
