"""Vector storage contract: embeddings per exact revision, model isolation, and coherence across stores."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from powercontext.store.base import (
    Embedding,
    FamilyStore,
    MemoryEdit,
    MemoryMerge,
    NewMemory,
    NewTopic,
    Store,
    TopicEdit,
)
from powercontext.store.code import CodeStore, NewCodeChunk, NewCodeFile

DIM = 16
MODEL = "test:model:16"


def basis(i: int) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[i] = 1.0
    return v


def add(store: Store, scope: str, text: str, axis: int | None, model: str = MODEL) -> str:
    embedding = None if axis is None else Embedding(model, basis(axis))
    record = store.create_memories(scope, [NewMemory(text, "fact", (), embedding=embedding)])[0]
    return record.key.artifact_id


def nearest(store: Store, scope: str, axis: int, model: str = MODEL, limit: int = 5) -> list[str]:
    return [h.record.text for h in store.search_vector(scope, model, basis(axis), limit)]


def test_vector_search_follows_active_heads_through_every_write(open_store: Callable[[], Store]) -> None:
    writer, reader = open_store(), open_store()  # two stores on one file: another process's view
    writer.create_scope("s", "S", [])
    a = add(writer, "s", "alpha", 0)
    add(writer, "s", "beta", 1)
    assert nearest(reader, "s", 0)[0] == "alpha"
    assert nearest(writer, "s", 0)[0] == "alpha"

    writer.revise_memory("s", a, 1, MemoryEdit("alpha two", embedding=Embedding(MODEL, basis(2))))
    for store in (writer, reader):
        assert nearest(store, "s", 2)[0] == "alpha two"
        assert "alpha" not in nearest(store, "s", 0)  # the old revision's vector is not searchable

    writer.change_lifecycle("s", a, "forget", None)
    for store in (writer, reader):
        assert nearest(store, "s", 2) == ["beta"]
    writer.change_lifecycle("s", a, "restore", None)
    for store in (writer, reader):
        assert nearest(store, "s", 2)[0] == "alpha two"


def test_a_store_that_searched_before_another_wrote_answers_from_the_new_vectors(
    open_store: Callable[[], Store],
) -> None:
    # The reader holds a matrix from its first search; the writer (another process's view) then revises one
    # memory's vector and adds another. The reader's next searches must rank by the vectors now stored.
    writer, reader = open_store(), open_store()
    writer.create_scope("s", "S", [])
    a = add(writer, "s", "alpha", 0)
    leaning = (0.6 * basis(0) + 0.8 * basis(1)).astype(np.float32)
    writer.create_memories("s", [NewMemory("leaning", "fact", (), embedding=Embedding(MODEL, leaning))])
    assert nearest(reader, "s", 0, limit=1) == ["alpha"]

    writer.revise_memory("s", a, 1, MemoryEdit("alpha moved", embedding=Embedding(MODEL, basis(2))))
    add(writer, "s", "newcomer", 3)
    assert nearest(reader, "s", 0, limit=1) == ["leaning"]  # not the memory whose old vector was nearest
    assert nearest(reader, "s", 3, limit=1) == ["newcomer"]  # a vector written after the reader's matrix


def test_merge_embeds_the_result_and_hides_the_sources(store: Store) -> None:
    store.create_scope("s", "S", [])
    a, b = add(store, "s", "one", 0), add(store, "s", "two", 1)
    store.merge_memories("s", MemoryMerge(((a, 1), (b, 1)), "one and two", "fact", (), Embedding(MODEL, basis(3))))
    assert nearest(store, "s", 0) == ["one and two"]


def test_vectors_of_another_model_are_never_compared(store: Store) -> None:
    store.create_scope("s", "S", [])
    add(store, "s", "old model", 0, model="other:model:16")
    add(store, "s", "no vector", None)
    assert nearest(store, "s", 0) == []
    status = store.embedding_status(MODEL)
    assert (status.active_heads, status.current_model, status.other_models) == (2, 0, 1)


def test_backlog_and_write_embeddings(store: Store) -> None:
    store.create_scope("s", "S", [])
    store.create_scope("t", "T", [])
    add(store, "s", "first", None)
    revised = add(store, "t", "second", 0, model="other:model:16")
    add(store, "s", "third", 1)
    backlog = store.embedding_backlog(MODEL, 0, 10)
    assert [t.text for t in backlog] == ["first", "second"]
    # A head revised after the backlog was read keeps its new revision; the stale task is skipped.
    store.revise_memory("t", revised, 1, MemoryEdit("second, revised"))
    written = store.write_embeddings(MODEL, [(t, basis(4 + i)) for i, t in enumerate(backlog)])
    assert written == 1
    assert nearest(store, "s", 4) == ["first", "third"]
    assert [t.text for t in store.embedding_backlog(MODEL, 0, 10)] == ["second, revised"]
    # Paging is by artifact row: a revised head keeps its row, so a pass that is past it does not see it again.
    assert store.embedding_backlog(MODEL, backlog[-1].rowid, 10) == []


def test_scopes_do_not_share_vectors(store: Store) -> None:
    store.create_scope("s", "S", [])
    store.create_scope("t", "T", [])
    add(store, "s", "in s", 0)
    add(store, "t", "in t", 0)
    assert nearest(store, "s", 0) == ["in s"]
    assert nearest(store, "t", 0) == ["in t"]


def test_topic_vectors_follow_topic_heads(open_store: Callable[[], Store]) -> None:
    store = open_store()
    assert isinstance(store, FamilyStore)
    store.create_scope("s", "S", [])
    topic = store.create_topic("s", NewTopic("Ledger", "settles nightly", (), embedding=Embedding(MODEL, basis(0))))
    plain = store.create_topic("s", NewTopic("Plain", "no vector", ()))
    assert [h.record.title for h in store.search_topic_vector("s", MODEL, basis(0), 5)] == ["Ledger"]
    # Atomic Memory vectors and Topic Memory vectors never meet.
    assert store.search_vector("s", MODEL, basis(0), 5) == []
    revised = store.revise_topic(
        "s", topic.key.artifact_id, 1, TopicEdit(body="settles at noon", embedding=Embedding(MODEL, basis(1)))
    )
    assert [h.record.key for h in store.search_topic_vector("s", MODEL, basis(1), 5)] == [revised.key]
    store.change_topic_lifecycle("s", topic.key.artifact_id, "retire", None)
    assert store.search_topic_vector("s", MODEL, basis(1), 5) == []
    store.change_topic_lifecycle("s", topic.key.artifact_id, "restore", None)
    assert [h.record.key for h in store.search_topic_vector("s", MODEL, basis(1), 5)] == [revised.key]
    backlog = store.embedding_backlog(MODEL, 0, 10)
    assert [(t.key.family, t.text) for t in backlog] == [("topic-memory", "Plain\n\nno vector")]
    assert backlog[0].key == plain.key


def _code_file(path: str, axes: list[int], model: str = MODEL) -> NewCodeFile:
    chunks = tuple(
        NewCodeChunk(i + 1, i + 1, f"sha256:{i:064x}", f"line {i} of {path}\n", "line", Embedding(model, basis(axis)))
        for i, axis in enumerate(axes)
    )
    return NewCodeFile(path, "sha256:" + "0" * 64, "text", 10, len(axes), path, chunks)


def test_code_chunk_vectors_follow_reindexing(open_store: Callable[[], Store]) -> None:
    writer, reader = open_store(), open_store()
    assert isinstance(writer, CodeStore) and isinstance(reader, CodeStore)
    writer.create_scope("s", "S", [])
    writer.register_code_tree("s", "dir:1", "dir", "/nowhere", 1 << 20)
    writer.put_code_files("s", "dir:1", [_code_file("a.py", [0, 1]), _code_file("b.py", [2])])
    writer.finish_code_index("s", "dir:1", [])
    for store in (writer, reader):
        assert isinstance(store, CodeStore)
        assert [(h.chunk.path, h.chunk.start_line) for h in store.search_code_vector("s", MODEL, basis(1), 1)] == [
            ("a.py", 2)
        ]
        assert store.search_code_vector("s", "other:model:16", basis(1), 5) == []
    # a.py changed: its chunks and their vectors are replaced; b.py removed.
    writer.put_code_files("s", "dir:1", [_code_file("a.py", [3])])
    writer.finish_code_index("s", "dir:1", ["b.py"])
    for store in (writer, reader):
        assert isinstance(store, CodeStore)
        found = {(h.chunk.path, h.chunk.start_line) for h in store.search_code_vector("s", MODEL, basis(3), 10)}
        assert found == {("a.py", 1)}
