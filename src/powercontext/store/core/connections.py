"""What the core mixins (memories, families, code) use of a concrete store, declared once for the type checker."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from powercontext.store.core.vectors import Vector, VectorChanges


class StoreConnections:
    """The serialized write transaction, the per-thread readers, and the vector changes and search."""

    if TYPE_CHECKING:
        _changes: VectorChanges

        def _write(self) -> AbstractContextManager[Any]: ...
        def _reader(self) -> Any: ...
        def _vector_hits(
            self, conn: Any, scope_id: str, family: str, model_id: str, vector: Vector, limit: int
        ) -> list[tuple[int, float]]: ...
