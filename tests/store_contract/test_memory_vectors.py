"""``memory_vectors``: stored Atomic Memory embeddings read back by exact revision, on every backend."""

from __future__ import annotations

import numpy as np

from powercontext.domain.identity import ArtifactKey
from powercontext.store.base import Embedding, MemoryEdit, NewMemory, Store

DIM = 8
MODEL = "test:model:8"


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def create(store: Store, scope: str, text: str, vector: np.ndarray | None, model: str = MODEL) -> ArtifactKey:
    embedding = None if vector is None else Embedding(model, vector)
    return store.create_memories(scope, [NewMemory(text, "fact", (), embedding=embedding)])[0].key


def test_vectors_come_back_exactly_as_stored_for_the_keys_asked(store: Store) -> None:
    store.create_scope("s", "S", [])
    first, second, third = unit(1), unit(2), unit(3)
    a, b = create(store, "s", "alpha", first), create(store, "s", "beta", second)
    create(store, "s", "gamma", third)

    found = store.memory_vectors("s", MODEL, [b, a])

    assert set(found) == {a, b}  # only the keys asked for
    assert found[a].dtype == np.float32
    assert found[a].tobytes() == first.tobytes()  # bit for bit: both backends keep float32 bytes
    assert found[b].tobytes() == second.tobytes()


def test_a_key_without_a_vector_of_that_model_is_absent(store: Store) -> None:
    store.create_scope("s", "S", [])
    plain = create(store, "s", "no vector", None)
    other = create(store, "s", "other model", unit(4), model="other:model:8")
    mine = create(store, "s", "mine", unit(5))

    assert set(store.memory_vectors("s", MODEL, [plain, other, mine])) == {mine}
    assert set(store.memory_vectors("s", "other:model:8", [plain, other, mine])) == {other}
    assert store.memory_vectors("s", MODEL, []) == {}


def test_each_revision_reads_its_own_vector(store: Store) -> None:
    store.create_scope("s", "S", [])
    old_vector, new_vector = unit(6), unit(7)
    v1 = create(store, "s", "deploys on Fridays", old_vector)
    head = store.revise_memory(
        "s", v1.artifact_id, 1, MemoryEdit("deploys on Tuesdays", embedding=Embedding(MODEL, new_vector))
    )

    found = store.memory_vectors("s", MODEL, [v1, head.key])

    assert found[v1].tobytes() == old_vector.tobytes()
    assert found[head.key].tobytes() == new_vector.tobytes()
    missing = ArtifactKey("s", "atomic-memory", v1.artifact_id, 9)
    assert store.memory_vectors("s", MODEL, [missing]) == {}


def test_another_scopes_memory_is_never_read(store: Store) -> None:
    store.create_scope("s", "S", [])
    store.create_scope("t", "T", [])
    theirs = create(store, "t", "their note", unit(8))
    create(store, "s", "our note", unit(9))

    assert store.memory_vectors("s", MODEL, [theirs]) == {}
    forged = ArtifactKey("s", "atomic-memory", theirs.artifact_id, theirs.revision)
    assert store.memory_vectors("s", MODEL, [forged]) == {}
    assert set(store.memory_vectors("t", MODEL, [theirs])) == {theirs}
