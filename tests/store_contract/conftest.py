"""Store backends under contract test. Adding a backend is one entry in ``BACKENDS``."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from powercontext.store.base import Store
from powercontext.store.sqlite import SqliteStore
from tests.seekdb_support import seekdb_store

# name -> factory(directory) returning an open Store that persists under that directory.
BACKENDS: list[tuple[str, Callable[[Path], Store]]] = [
    ("sqlite", lambda d: SqliteStore(d / "contract.db")),
    # Embedded seekdb: one engine per session, the contract database emptied per test.
    ("seekdb", seekdb_store),
]


@pytest.fixture(params=[factory for _, factory in BACKENDS], ids=[name for name, _ in BACKENDS])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """Opens (or reopens) the backend on this test's directory; every opened store is closed after."""
    factory: Callable[[Path], Store] = request.param
    opened: list[Store] = []

    def open_() -> Store:
        store = factory(tmp_path)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        with contextlib.suppress(Exception):  # already closed by the test
            store.close()


@pytest.fixture
def store(open_store: Callable[[], Store]) -> Store:
    return open_store()
