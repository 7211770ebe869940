"""A vector matrix load on OceanBase is not cut by the session's statement deadline.

Loading a (Scope, family) matrix reads every vector of it: a million took 13.5 s on embedded seekdb, past the
10 s ``ob_query_timeout`` every session has, and every hybrid prepare of that Scope answered 503. Here the
reader's session deadline is set to 1 µs for exactly the statements that read vectors, which makes any load
"too slow"; the search must still answer, from the engine's rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from powercontext.store.base import Embedding, NewMemory
from powercontext.store.oceanbase.dialect import Connection
from powercontext.store.oceanbase.engine import connect, native_reader
from powercontext.store.oceanbase.store import _TEXT_READS, OceanBaseStore
from tests.seekdb_support import fresh_location, require_seekdb

MODEL = "test:matrix-load"


class _ShortDeadlineConnection(Connection):
    """Runs each statement that reads stored vectors under a 1 µs session deadline."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        if "e.vector" not in sql:
            return super().execute(sql, params)
        with self.raw.cursor() as cursor:
            cursor.execute("SET SESSION ob_query_timeout = 1")
        try:
            return super().execute(sql, params)
        finally:
            with self.raw.cursor() as cursor:
                cursor.execute("SET SESSION ob_query_timeout = DEFAULT")


class _ShortDeadlineStore(OceanBaseStore):
    def _connect_reader(self) -> Connection:
        raw = connect(self.location, self.location.database)
        raw.autocommit(True)
        return _ShortDeadlineConnection(raw, native_reader(self.location), _TEXT_READS)


@pytest.fixture
def store() -> Iterator[OceanBaseStore]:
    require_seekdb()
    opened = _ShortDeadlineStore(fresh_location("matrix_load"))
    try:
        yield opened
    finally:
        opened.close()


def test_a_matrix_load_outlives_a_session_deadline_shorter_than_it(store: OceanBaseStore) -> None:
    store.create_scope("load:s", "t", [])
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((200, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    items = [NewMemory(f"memory {i}", "fact", (), embedding=Embedding(MODEL, v)) for i, v in enumerate(vectors)]
    created = store.create_memories("load:s", items)
    hits = store.search_vector("load:s", MODEL, vectors[42], 5)
    assert hits and hits[0].record.key.artifact_id == created[42].key.artifact_id
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
