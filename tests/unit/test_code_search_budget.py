"""The SQLite code search's term pruning, exercised on a Scope bigger than its posting budget."""

from __future__ import annotations

import pytest

from powercontext.store.code import NewCodeChunk, NewCodeFile
from powercontext.store.core.code_index import POSTING_BUDGET
from powercontext.store.sqlite import SqliteStore
from tests.support import sha256_of

CHUNKS = POSTING_BUDGET + 400


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> SqliteStore:
    store = SqliteStore(tmp_path_factory.mktemp("budget") / "b.db")
    store.create_scope("big", "t", [])
    store.create_scope("small", "t", [])
    store.register_code_tree("big", "dir:big", "dir", "/srv/big", 1000)
    files = []
    for i in range(CHUNKS):
        # "common" is in every chunk, "half" in half of them, "tenth" in a tenth; one needle.
        terms = ["common", f"unique{i}"] + ["half"] * (i % 2 == 0) + ["tenth"] * (i % 10 == 0)
        terms += ["needle"] * (i == 1234)
        text = " ".join(terms) + "\n"
        chunk = NewCodeChunk(1, 1, sha256_of(text), text, " ".join(terms))
        files.append(NewCodeFile(f"f{i}.txt", sha256_of(text), "text", len(text), 1, f"f{i} txt", (chunk,)))
    store.put_code_files("big", "dir:big", files)
    store.finish_code_index("big", "dir:big", [])
    store.register_code_tree("small", "dir:small", "dir", "/srv/small", 1000)
    text = "common half smallonly\n"
    chunk = NewCodeChunk(1, 1, sha256_of(text), text, "common half smallonly")
    store.put_code_files(
        "small", "dir:small", [NewCodeFile("s.txt", sha256_of(text), "text", 12, 1, "s txt", (chunk,))]
    )
    store.finish_code_index("small", "dir:small", [])
    return store


def test_common_terms_are_dropped_and_the_rare_one_kept(big: SqliteStore) -> None:
    conn = big._reader()

    def _affordable_terms(conn: object, scope_id: str, terms: list[str]) -> tuple[list[str], bool]:
        return big.affordable_code_terms(conn, scope_id, terms)

    assert _affordable_terms(conn, "big", ["common", "half", "needle", "absent"]) == (["needle"], True)
    kept, rankable = _affordable_terms(conn, "big", ["common", "tenth"])
    assert kept == ["tenth"] and rankable  # a tenth of CHUNKS fits the budget
    assert _affordable_terms(conn, "big", ["common"]) == (["common"], False)  # the rarest is always kept
    # Rare in the whole table is not enough: a term of another Scope only must not displace this Scope's.
    assert _affordable_terms(conn, "big", ["smallonly", "tenth"]) == (["tenth"], True)
    # A Scope within the budget is ranked whole, with every term.
    assert _affordable_terms(conn, "small", ["common", "half", "absent"]) == (["common", "half", "absent"], True)


def test_searches_stay_correct_when_pruned(big: SqliteStore) -> None:
    hit = big.search_code("big", ["common", "half", "needle"], 5)[0]
    assert hit.chunk.path == "f1234.txt"
    assert len(big.search_code("big", ["smallonly", "half"], 5)) == 5
    window = big.search_code("big", ["common"], 7)
    assert len(window) == 7 and all(h.chunk.fingerprint == "dir:big" for h in window)
    assert [h.chunk.path for h in big.search_code("small", ["common", "half"], 5)] == ["s.txt"]
