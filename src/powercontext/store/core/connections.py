"""What the core mixins (memories, families, code) use of a concrete store, declared once for the type checker,
and the connection bookkeeping both stores keep the same way."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from powercontext.store.core.vectors import VectorCache, VectorChanges
from powercontext.store.errors import StoreUnavailable
from powercontext.store.health import StoreHealth, StoreProblem

if TYPE_CHECKING:
    from powercontext.store.core.fulltext import FullTextIndex
    from powercontext.store.core.vectors import Vector


class StoreConnections:
    """The serialized write transaction, the per-thread readers, the full-text index, and the vector changes and
    search."""

    if TYPE_CHECKING:
        _changes: VectorChanges
        _fulltext: FullTextIndex  # the only way any family's text reaches an index or a search

        def _write(self) -> AbstractContextManager[Any]: ...
        def _reader(self) -> Any: ...
        def _vector_hits(
            self, conn: Any, scope_id: str, family: str, model_id: str, vector: Vector, limit: int
        ) -> list[tuple[int, float]]: ...


class ConnectionPool(StoreConnections):
    """One writer behind a lock, one reader per thread (all remembered, so ``close`` reaches them), and the
    vector cache the writer keeps current. A store sets ``_DRIVER_ERRORS`` and closes its own writer."""

    _DRIVER_ERRORS: ClassVar[tuple[type[Exception], ...]]

    def _open_pool(self, changes: VectorChanges, health: StoreHealth) -> None:
        self.health = health
        self._write_lock = threading.Lock()
        self._local = threading.local()
        self._readers: list[Any] = []
        self._readers_lock = threading.Lock()
        self._closed = False
        self._vectors = VectorCache()
        self._changes = changes

    @contextmanager
    def _write_turn(self) -> Iterator[None]:
        """This process's turn at the writer: the write lock, refused once the store is closed."""
        with self._write_lock:
            if self._closed:
                raise StoreUnavailable()
            yield

    def _close_writer(self) -> None:
        raise NotImplementedError

    def ready(self) -> bool:
        unavailable: tuple[type[Exception], ...] = (StoreUnavailable, *self._DRIVER_ERRORS)
        try:
            self._reader().execute("SELECT 1 FROM schema_migrations LIMIT 1").fetchone()
        except unavailable:
            return False
        return True

    def readiness_problem(self) -> StoreProblem | None:
        """Why the store cannot serve writes (or reads) now, beyond answering a read (``health.StoreHealth``)."""
        return self.health.problem()

    def close(self) -> None:
        self._closed = True
        with self._readers_lock:
            for conn in self._readers:
                conn.close()
            self._readers.clear()
        with self._write_lock:
            self._close_writer()
