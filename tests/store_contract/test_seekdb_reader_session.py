"""Reads through the embedded engine's own C client (``engine.native_reader``).

Against the real embedded seekdb engine: text that needs escaping comes back exactly as written through every
read the prepare path makes (Scope, full-text search, vector search, Topic Memory), query terms that need
escaping are matched, and a reader whose C-client session is lost answers through its pymysql session.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import pytest

from powercontext.store.base import Embedding, NewMemory, NewTopic
from powercontext.text.tokenize import query_terms
from tests.seekdb_support import open_emptied, require_seekdb

if TYPE_CHECKING:  # importing the store needs the oceanbase extra
    from powercontext.store.oceanbase.store import OceanBaseStore

MODEL = "test:model:4"
AWKWARD = [
    "quote ' and double \" and back\\slash \\' zebrafish",
    "percent % and %s and %% and %(name)s zebrafish",
    "new\nline and\ttab, emoji 🦓 and 数据库 zebrafish",
    "o'brien's backslash-n \\n zebrafish",
]


@pytest.fixture
def store() -> Iterator[OceanBaseStore]:
    require_seekdb()
    opened = open_emptied("reader_session")
    yield opened
    opened.close()


def axis(i: int) -> Embedding:
    vector = np.zeros(4, dtype=np.float32)
    vector[i] = 1.0
    return Embedding(MODEL, vector)


def test_the_prepare_reads_return_awkward_text_exactly(store: OceanBaseStore) -> None:
    assert store._reader()._native is not None  # the embedded engine's reads take the C client here
    title = "it's a \\ title with %s"
    store.create_scope("s", title, [])
    store.create_memories(
        "s", [NewMemory(text, "fact", ("t'ag",), embedding=axis(i)) for i, text in enumerate(AWKWARD)]
    )
    store.create_topic("s", NewTopic("o'brien %s", "topic body with \\ and ' zebrafish", ()))

    assert store.get_scope("s").title == title
    found = {hit.record.text: hit.record for hit in store.search_text("s", query_terms("zebrafish"), 10)}
    assert set(found) == set(AWKWARD)
    assert all(record.tags == ("t'ag",) for record in found.values())
    for i, text in enumerate(AWKWARD):
        assert [hit.record.text for hit in store.search_vector("s", MODEL, axis(i).vector, 1)] == [text]
    topics = store.search_topics("s", query_terms("zebrafish"), 5)
    assert [(t.record.title, t.record.body) for t in topics] == [("o'brien %s", "topic body with \\ and ' zebrafish")]
    assert store._reader()._native is not None  # no read failed over to pymysql


def test_query_terms_that_need_escaping_are_matched(store: OceanBaseStore) -> None:
    store.create_scope("s", "s", [])
    store.create_memories("s", [NewMemory(text, "fact", ()) for text in AWKWARD])
    assert store.search_text("s", query_terms("o'brien's"), 10)[0].record.text == AWKWARD[3]
    # Terms the tokenizer never makes go into the statements as they are: escaped, matched against nothing.
    assert store.search_text("s", ["' OR 1=1 --", "\\", "\\'", "%s", "%%", "zebrafish'"], 10) == []
    assert store._reader()._native is not None  # no read failed over to pymysql


def test_a_reader_whose_c_client_session_is_lost_answers_through_pymysql(store: OceanBaseStore) -> None:
    store.create_scope("s", "s", [])
    store.create_memories("s", [NewMemory(AWKWARD[0], "fact", (), embedding=axis(0))])
    reader = store._reader()
    reader._native.close()  # as if the engine had dropped the session

    assert [h.record.text for h in store.search_text("s", query_terms("zebrafish"), 5)] == [AWKWARD[0]]
    assert [h.record.text for h in store.search_vector("s", MODEL, axis(0).vector, 5)] == [AWKWARD[0]]
    assert store._reader() is reader and reader._native is None  # the same reader, now on pymysql alone


def test_a_reader_whose_pymysql_session_broke_is_replaced_with_both_sessions(store: OceanBaseStore) -> None:
    store.create_scope("s", "s", [])
    store.create_memories("s", [NewMemory(AWKWARD[1], "fact", ())])
    broken = store._reader()
    broken.raw.close()  # as if the engine had dropped it

    assert [h.record.text for h in store.search_text("s", query_terms("zebrafish"), 5)] == [AWKWARD[1]]
    fresh = store._reader()
    assert fresh is not broken and fresh._native is not None
    assert broken._native is None  # the old C-client session was closed, not leaked
