"""Open the store a location names: SQLite, embedded seekdb, or a seekdb/OceanBase server."""

from __future__ import annotations

from powercontext.store.base import Store
from powercontext.store.location import StoreLocation


def open_store(location: StoreLocation) -> Store:
    """The open store, schema created or migrated; raises ``EngineUnavailable`` when seekdb cannot start."""
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
    return OceanBaseStore(location)
