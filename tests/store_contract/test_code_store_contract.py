"""The ``CodeStore`` protocol contract, for every backend in ``BACKENDS`` that keeps code evidence."""

from __future__ import annotations

import uuid
from typing import cast

import numpy as np
import numpy.typing as npt
import pytest

from powercontext.store.base import Store
from powercontext.store.code import CodeStore, NewCodeChunk, NewCodeFile
from powercontext.store.errors import CodeNotFound, ScopeNotFound
from tests.ci import unavailable
from tests.support import sha256_of


@pytest.fixture
def code(store: Store) -> CodeStore:
    if not isinstance(store, CodeStore):
        unavailable("this backend keeps no code evidence")
    return store


def scope(store: CodeStore) -> str:
    scope_id = f"s-{uuid.uuid4().hex[:12]}"
    cast(Store, store).create_scope(scope_id, "title", [])
    return scope_id


def chunk(start: int, end: int, text: str, terms: str) -> NewCodeChunk:
    return NewCodeChunk(start, end, sha256_of(text), text, terms)


def file(path: str, *chunks: NewCodeChunk, digest: str | None = None) -> NewCodeFile:
    body = "".join(c.text for c in chunks)
    lines = max((c.end_line for c in chunks), default=0)
    terms = " ".join(path.replace("/", " ").replace(".", " ").split())
    return NewCodeFile(path, digest or sha256_of(body), "python", len(body), lines, terms, tuple(chunks))


def test_register_is_idempotent_and_repoints(code: CodeStore) -> None:
    sid = scope(code)
    first = code.register_code_tree(sid, "git:abc", "git", "/srv/one", 1000)
    again = code.register_code_tree(sid, "git:abc", "git", "/srv/two", 2000)
    assert (again.root_path, again.max_file_bytes) == ("/srv/two", 2000)
    assert code.get_code_tree(sid, "git:abc") == again
    assert first.fingerprint == again.fingerprint
    with pytest.raises(ScopeNotFound):
        code.register_code_tree("missing-" + sid, "git:abc", "git", "/srv", 1)


def test_put_search_replace_and_remove(code: CodeStore) -> None:
    sid = scope(code)
    code.register_code_tree(sid, "git:abc", "git", "/srv", 1000)
    a = file("a.py", chunk(1, 2, "def ledger():\n    pass\n", "ledger pass"))
    code.put_code_files(sid, "git:abc", [a, file("b.py", chunk(1, 1, "x\n", "x"))])
    assert set(code.code_file_hashes(sid, "git:abc")) == {"a.py", "b.py"}
    (hit,) = code.search_code(sid, ["ledger"], 10)
    assert (hit.chunk.path, hit.chunk.start_line, hit.chunk.end_line) == ("a.py", 1, 2)
    assert hit.chunk.text == "def ledger():\n    pass\n" and hit.chunk.fingerprint == "git:abc"
    # Path terms are searchable too.
    assert [h.chunk.path for h in code.search_code(sid, ["b"], 10)] == ["b.py"]

    code.put_code_files(sid, "git:abc", [file("a.py", chunk(1, 1, "def invoice():\n", "invoice"))])
    assert code.search_code(sid, ["ledger"], 10) == []
    assert [h.chunk.text for h in code.search_code(sid, ["invoice"], 10)] == ["def invoice():\n"]
    assert code.get_code_file(sid, "git:abc", "a.py").line_count == 1

    assert code.finish_code_index(sid, "git:abc", ["b.py", "never-indexed.py"]) == 1
    assert set(code.code_file_hashes(sid, "git:abc")) == {"a.py"}
    with pytest.raises(CodeNotFound):
        code.get_code_file(sid, "git:abc", "b.py")


def test_a_failing_batch_writes_nothing(code: CodeStore) -> None:
    sid = scope(code)
    code.register_code_tree(sid, "git:abc", "git", "/srv", 1000)
    good = file("good.py", chunk(1, 1, "alpha\n", "alpha"))
    bad = file("bad.py", chunk(0, 1, "beta\n", "beta"))  # line 0 violates the schema
    with pytest.raises(Exception):  # noqa: B017 - the backend's own integrity error
        code.put_code_files(sid, "git:abc", [good, bad])
    assert code.code_file_hashes(sid, "git:abc") == {}
    assert code.search_code(sid, ["alpha"], 10) == []


def test_scopes_and_trees_are_isolated(code: CodeStore) -> None:
    a, b = scope(code), scope(code)
    for sid in (a, b):
        code.register_code_tree(sid, "git:same", "git", "/srv", 1000)
    code.register_code_tree(a, "dir:other", "dir", "/srv2", 1000)
    code.put_code_files(a, "git:same", [file("x.py", chunk(1, 1, "kiwi\n", "kiwi"))])
    code.put_code_files(a, "dir:other", [file("y.py", chunk(1, 1, "kiwi again\n", "kiwi again"))])
    assert {h.chunk.fingerprint for h in code.search_code(a, ["kiwi"], 10)} == {"git:same", "dir:other"}
    assert code.search_code(b, ["kiwi"], 10) == []
    assert code.code_file_hashes(b, "git:same") == {}
    with pytest.raises(CodeNotFound):
        code.get_code_tree(b, "dir:other")
    with pytest.raises(ScopeNotFound):
        code.get_code_tree("missing-" + a, "git:same")


def test_unknown_trees_and_empty_queries(code: CodeStore) -> None:
    sid = scope(code)
    assert code.code_file_hashes(sid, "git:none") == {}
    assert code.search_code(sid, [], 10) == []
    assert code.search_code(sid, ["nothing"], 10) == []
    with pytest.raises(CodeNotFound):
        code.put_code_files(sid, "git:none", [])
    with pytest.raises(CodeNotFound):
        code.finish_code_index(sid, "git:none", [])


def test_quotes_in_terms_are_literal(code: CodeStore) -> None:
    sid = scope(code)
    code.register_code_tree(sid, "git:abc", "git", "/srv", 1000)
    code.put_code_files(sid, "git:abc", [file("q.py", chunk(1, 1, "x\n", "x"))])
    assert code.search_code(sid, ['"', 'a" OR "x', "*", "NEAR(x)"], 10) == []


def _vector(*values: float) -> npt.NDArray[np.float32]:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_chunks_without_a_vector_are_a_backlog_until_written(code: CodeStore) -> None:
    sid = scope(code)
    code.register_code_tree(sid, "git:abc", "git", "/srv", 1000)
    code.put_code_files(sid, "git:abc", [file("a.py", chunk(1, 1, "alpha\n", "alpha"), chunk(2, 2, "beta\n", "beta"))])
    mine = [t for t in code.code_embedding_backlog("m1", 0, 10_000) if t.scope_id == sid]
    assert [t.text for t in mine] == ["alpha\n", "beta\n"]
    first, second = mine
    assert [t.chunk_id for t in code.code_embedding_backlog("m1", first.chunk_id, 10_000) if t.scope_id == sid] == [
        second.chunk_id
    ]
    assert code.write_code_embeddings("m1", [(first, _vector(1, 0, 0)), (second, _vector(0, 1, 0))]) == 2
    assert [t for t in code.code_embedding_backlog("m1", 0, 10_000) if t.scope_id == sid] == []
    hits = code.search_code_vector(sid, "m1", _vector(0.1, 1, 0), 10)
    assert [h.chunk.text for h in hits] == ["beta\n", "alpha\n"]
    # Another model's vectors are its own backlog; writing them replaces the first model's.
    assert len([t for t in code.code_embedding_backlog("m2", 0, 10_000) if t.scope_id == sid]) == 2
    assert code.write_code_embeddings("m2", [(first, _vector(0, 0, 1))]) == 1
    assert [h.chunk.text for h in code.search_code_vector(sid, "m2", _vector(0, 0, 1), 10)] == ["alpha\n"]
    assert [h.chunk.text for h in code.search_code_vector(sid, "m1", _vector(1, 0, 0), 10)] == ["beta\n"]


def test_the_backlog_size_counts_the_chunks_without_a_vector_by_that_model(code: CodeStore) -> None:
    before = code.code_embedding_backlog_size("size-model")
    sid = scope(code)
    code.register_code_tree(sid, "git:abc", "git", "/srv", 1000)
    code.put_code_files(sid, "git:abc", [file("a.py", chunk(1, 1, "alpha\n", "alpha"), chunk(2, 2, "beta\n", "beta"))])
    assert code.code_embedding_backlog_size("size-model") == before + 2
    first, _ = [t for t in code.code_embedding_backlog("size-model", 0, 10_000) if t.scope_id == sid]
    assert code.write_code_embeddings("size-model", [(first, _vector(1, 0, 0))]) == 1
    assert code.code_embedding_backlog_size("size-model") == before + 1
    assert code.code_embedding_backlog_size("another-model") >= 2


def test_a_vector_for_a_chunk_replaced_since_it_was_read_is_not_written(code: CodeStore) -> None:
    sid = scope(code)
    code.register_code_tree(sid, "git:abc", "git", "/srv", 1000)
    code.put_code_files(sid, "git:abc", [file("a.py", chunk(1, 1, "old text\n", "old text"))])
    (stale,) = [t for t in code.code_embedding_backlog("m1", 0, 10_000) if t.scope_id == sid]
    code.put_code_files(sid, "git:abc", [file("a.py", chunk(1, 1, "new text\n", "new text"))])
    assert code.write_code_embeddings("m1", [(stale, _vector(1, 0))]) == 0
    (fresh,) = [t for t in code.code_embedding_backlog("m1", 0, 10_000) if t.scope_id == sid]
    assert fresh.text == "new text\n"
    assert code.search_code_vector(sid, "m1", _vector(1, 0), 10) == []
