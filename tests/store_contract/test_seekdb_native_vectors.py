"""``?vectors=native``: embeddings kept in the engine's ``VECTOR(n)`` columns and ranked by the engine.

Against the real embedded seekdb engine: the engine's ranking equals the exact in-memory ranking of an ordinary
database holding the same data, with cosines to float32 rounding; every write (create, batch, revise, forget,
restore, Topic Memory) is found or dropped by the next search; ``store copy`` fills the columns; an exact database
that already holds embeddings refuses the option and says how to switch.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from powercontext.store.base import Embedding, MemoryEdit, NewMemory, NewTopic
from powercontext.store.location import StoreLocation, parse_store_url
from powercontext.store.sqlite import SqliteStore
from tests.seekdb_support import fresh_location, new_engine_dir, open_emptied, open_seekdb, require_seekdb, store_copy

if TYPE_CHECKING:  # importing the store needs the oceanbase extra
    from powercontext.store.oceanbase.store import OceanBaseStore

DIM = 12
MODEL = "m1"


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def stored_vectors(store: OceanBaseStore) -> int:
    """Rows in the engine's VECTOR(DIM) table, read directly."""
    return int(store._reader().query(f"SELECT COUNT(*) FROM artifact_vectors_{DIM}").fetchone()[0])


@pytest.fixture
def native() -> Iterator[OceanBaseStore]:
    require_seekdb()
    store = open_emptied("native_vec", vectors="native")
    store.create_scope("p", "p", [])
    store.create_scope("other", "o", [])
    yield store
    store.close()


def memories(count: int, offset: int = 0) -> list[NewMemory]:
    return [
        NewMemory(f"memory {i}", "fact", (), None, "", Embedding(MODEL, unit(i))) for i in range(offset, offset + count)
    ]


def test_the_engine_ranks_like_the_exact_matrix(native: OceanBaseStore, tmp_path: Path) -> None:
    exact = SqliteStore(tmp_path / "exact.db")
    exact.create_scope("p", "p", [])
    try:
        for store in (native, exact):
            store.create_memories("p", memories(60))
            store.create_memories("p", [NewMemory("unembedded", "fact", ())])
        native.create_memories("other", memories(20, offset=200))  # another Scope's rows never answer
        assert stored_vectors(native) == 80
        for seed in (1000, 1001, 1002):
            query = unit(seed)
            got = native.search_vector("p", MODEL, query, 10)
            want = exact.search_vector("p", MODEL, query, 10)
            assert [h.record.text for h in got] == [h.record.text for h in want]
            np.testing.assert_allclose([h.score for h in got], [h.score for h in want], atol=1e-6)
        assert native.search_vector("p", "another-model", unit(1), 5) == []
        assert native.search_vector("p", MODEL, unit(1)[:8] / np.linalg.norm(unit(1)[:8]), 5) == []  # other dimension
    finally:
        exact.close()


def test_every_write_is_found_or_dropped_by_the_next_search(native: OceanBaseStore) -> None:
    (memory,) = native.create_memories("p", memories(1, offset=5))
    assert [h.record.text for h in native.search_vector("p", MODEL, unit(5), 3)] == ["memory 5"]
    revised = native.revise_memory(
        "p", memory.key.artifact_id, 1, MemoryEdit("moved", embedding=Embedding(MODEL, unit(77)))
    )
    assert native.search_vector("p", MODEL, unit(77), 1)[0].record.text == revised.text
    assert native.search_vector("p", MODEL, unit(77), 1)[0].score == pytest.approx(1.0, abs=1e-6)
    # The old revision's vector is no longer the head's: it answers nothing.
    assert all(h.score < 0.99 for h in native.search_vector("p", MODEL, unit(5), 3))
    native.change_lifecycle("p", memory.key.artifact_id, "forget", None)
    assert native.search_vector("p", MODEL, unit(77), 3) == []
    native.change_lifecycle("p", memory.key.artifact_id, "restore", None)
    assert [h.record.text for h in native.search_vector("p", MODEL, unit(77), 3)] == ["moved"]
    native.create_topic("p", NewTopic("Deploys", "blue green", (), None, "", Embedding(MODEL, unit(300))))
    assert [h.record.title for h in native.search_topic_vector("p", MODEL, unit(300), 3)] == ["Deploys"]


def test_store_copy_fills_the_vector_columns(tmp_path: Path) -> None:
    require_seekdb()
    source = SqliteStore(tmp_path / "source.db")
    source.create_scope("p", "p", [])
    source.create_memories("p", memories(25))
    source.close()
    target = f"seekdb://{new_engine_dir(tmp_path)}?vectors=native"
    source_url = f"sqlite://{tmp_path / 'source.db'}"
    copied = store_copy(source_url, target, timeout=300)
    assert copied.returncode == 0, copied.stderr
    assert "every table matches" in copied.stdout
    store = open_seekdb(parse_store_url(target))
    try:
        assert stored_vectors(store) == 25
        assert [h.record.text for h in store.search_vector("p", MODEL, unit(7), 1)] == ["memory 7"]
    finally:
        store.close()


def test_an_exact_database_with_embeddings_refuses_the_option() -> None:
    require_seekdb()
    from powercontext.store.oceanbase.engine import EngineUnavailable

    where = fresh_location("exact_vec")
    store = open_seekdb(where)
    store.create_scope("p", "p", [])
    store.create_memories("p", memories(2))
    store.close()
    with pytest.raises(EngineUnavailable) as refused:
        open_seekdb(StoreLocation("seekdb", path=where.path, database=where.database, vectors="native"))
    assert "store copy" in str(refused.value) and "?vectors=native" in str(refused.value)
    again = open_seekdb(StoreLocation("seekdb", path=where.path, database=where.database))
    try:
        assert [h.record.text for h in again.search_vector("p", MODEL, unit(1), 1)] == ["memory 1"]
    finally:
        again.close()


def test_store_urls_carry_the_vectors_choice() -> None:
    where = parse_store_url("oceanbase://pc@db.internal:2881/team?vectors=native&fulltext=native")
    assert (where.vectors, where.fulltext) == ("native", "native")
    assert parse_store_url(where.display()) == where
    assert parse_store_url("seekdb:///var/pc").vectors == "exact"
    from powercontext.store.location import BadStoreUrl

    with pytest.raises(BadStoreUrl, match=r"\?vectors= is exact \(the default\) or native"):
        parse_store_url("seekdb:///var/pc?vectors=hnsw")


def test_a_writer_started_before_the_database_went_native_keeps_the_native_indexes() -> None:
    require_seekdb()
    where = fresh_location("late_native")
    early = open_seekdb(where)  # opened while the database was still an ordinary one
    try:
        late = open_seekdb(StoreLocation("seekdb", path=where.path, database=where.database, vectors="native"))
        late.close()
        early.create_scope("p", "p", [])
        early.create_memories("p", memories(3))
        assert stored_vectors(early) == 3  # the early writer learned the mode from the lock it takes
        assert [h.record.text for h in early.search_vector("p", MODEL, unit(2), 1)] == ["memory 2"]
    finally:
        early.close()
