"""``?fulltext=native``: an OceanBase database whose full-text search is the engine's own FULLTEXT index.

Against the real embedded seekdb engine: CJK words inside longer CJK text and stemmed English are found, a write
is searchable by the next call, revisions/forgets/restores keep the index exact, Topic Memory is searched the
same way, the database keeps its choice when reopened without the option, and an existing exact database refuses
the option with a message that says how to switch.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from powercontext.store.base import MemoryEdit, NewMemory, NewTopic
from powercontext.store.location import StoreLocation, parse_store_url
from powercontext.text.tokenize import query_terms
from tests.seekdb_support import fresh_location, open_emptied, open_seekdb, require_seekdb

if TYPE_CHECKING:  # importing the store needs the oceanbase extra
    from powercontext.store.oceanbase.store import OceanBaseStore


@pytest.fixture
def native() -> Iterator[OceanBaseStore]:
    require_seekdb()
    store = open_emptied("native_fts", fulltext="native")
    store.create_scope("p", "p", [])
    store.create_scope("other", "o", [])
    yield store
    store.close()


def texts(store: OceanBaseStore, scope: str, query: str) -> list[str]:
    return [hit.record.text for hit in store.search_text(scope, query_terms(query), 10)]


def test_cjk_words_and_stems_are_found_by_the_engine_index(native: OceanBaseStore) -> None:
    native.create_memories(
        "p",
        [
            NewMemory("分布式数据库系统支持全文索引", "fact", ()),
            NewMemory("We chose SQLite as the embedded default", "decision", ()),
            NewMemory("The gateway signs every payout request", "fact", ()),
        ],
    )
    native.create_memories("other", [NewMemory("数据库 gateway payout", "fact", ())])
    assert texts(native, "p", "数据库") == ["分布式数据库系统支持全文索引"]  # a word inside a longer text
    assert texts(native, "p", "全文索引") == ["分布式数据库系统支持全文索引"]
    assert texts(native, "p", "signing payouts") == ["The gateway signs every payout request"]  # stems
    assert texts(native, "p", "embedded defaults sqlite") == ["We chose SQLite as the embedded default"]
    assert texts(native, "p", "kubernetes") == []
    # The engine ranks: a document matching more of the query comes first; scores are positive, best first.
    hits = native.search_text("p", query_terms("gateway payout request sqlite"), 10)
    assert [h.record.text for h in hits] == [
        "The gateway signs every payout request",
        "We chose SQLite as the embedded default",
    ]
    assert hits[0].score > hits[1].score > 0
    # Those are the engine's MATCH scores, not a recomputed BM25.
    assert [h.score for h in hits] == [score for score, _ in engine(native, "gateway payout request sqlite")]


def test_every_write_is_searchable_by_the_next_call_and_changes_stay_exact(native: OceanBaseStore) -> None:
    (memory,) = native.create_memories("p", [NewMemory("the ledger closes at midnight", "fact", ())])
    assert texts(native, "p", "ledger") == ["the ledger closes at midnight"]
    revised = native.revise_memory("p", memory.key.artifact_id, 1, MemoryEdit("the vault rotates keys hourly"))
    assert texts(native, "p", "ledger") == []
    assert texts(native, "p", "vault") == [revised.text]
    native.change_lifecycle("p", memory.key.artifact_id, "forget", None)
    assert texts(native, "p", "vault") == []
    assert engine(native, "vault") == []  # gone from the engine's index, not only filtered out
    native.change_lifecycle("p", memory.key.artifact_id, "restore", None)
    assert texts(native, "p", "vault") == [revised.text]
    # A batch in one transaction: all of it is searchable at once.
    native.create_memories("p", [NewMemory(f"batch item {i} 部署", "fact", ()) for i in range(40)])
    assert len(native.search_text("p", query_terms("部署"), 100)) == 40


def test_memories_holding_terms_are_the_engines_matches_in_one_scope(native: OceanBaseStore) -> None:
    # A native database keeps no postings to count: the holders are the engine's own matches, best first.
    native.create_memories(
        "p",
        [
            NewMemory("Dependabot opens the dependency PRs", "fact", ()),
            NewMemory("Dependabot replaced by Renovate", "decision", ()),
            NewMemory("The gateway signs payouts", "fact", ()),
        ],
    )
    native.create_memories("other", [NewMemory("Dependabot elsewhere", "fact", ())])
    found = [r.text for r in native.memories_holding("p", query_terms("dependabot renovate"), 5)]
    assert found == ["Dependabot replaced by Renovate", "Dependabot opens the dependency PRs"]
    assert len(native.memories_holding("p", query_terms("dependabot"), 1)) == 1  # the limit holds
    assert native.memories_holding("p", query_terms("kubernetes"), 5) == []


def test_topic_memory_is_searched_by_the_engine_index_too(native: OceanBaseStore) -> None:
    native.create_topic("p", NewTopic("发布流程", "每周四冻结代码, release on Friday", ()))
    native.create_topic("p", NewTopic("On-call", "Pager rotation is weekly", ()))
    assert [h.record.title for h in native.search_topics("p", query_terms("冻结"), 5)] == ["发布流程"]
    assert [h.record.title for h in native.search_topics("p", query_terms("rotation pager"), 5)] == ["On-call"]


def test_a_native_database_stays_native_when_reopened_without_the_option() -> None:
    require_seekdb()
    where = fresh_location("native_reopen", fulltext="native")
    first = open_seekdb(where)
    first.create_scope("p", "p", [])
    first.close()
    plain = open_seekdb(StoreLocation("seekdb", path=where.path, database=where.database))
    try:
        plain.create_memories("p", [NewMemory("written by a Server started without the option", "fact", ())])
        # In the engine's index, which this writer maintained, and found through it.
        assert len(engine(plain, "option")) == 1
        assert texts(plain, "p", "started without") == ["written by a Server started without the option"]
    finally:
        plain.close()


def test_an_exact_database_with_data_refuses_the_option_and_says_how_to_switch() -> None:
    require_seekdb()
    from powercontext.store.oceanbase.engine import EngineUnavailable

    where = fresh_location("exact_then_native")
    store = open_seekdb(where)
    store.create_scope("p", "p", [])
    store.create_memories("p", [NewMemory("already here", "fact", ())])
    store.close()
    with pytest.raises(EngineUnavailable) as refused:
        open_seekdb(StoreLocation("seekdb", path=where.path, database=where.database, fulltext="native"))
    assert "store copy" in str(refused.value) and "?fulltext=native" in str(refused.value)
    # Still an exact database, and it still works.
    again = open_seekdb(StoreLocation("seekdb", path=where.path, database=where.database))
    try:
        assert texts(again, "p", "already") == ["already here"]
    finally:
        again.close()


def engine(store: OceanBaseStore, query: str) -> list[tuple[float, int]]:
    """What the engine's FULLTEXT index itself answers for Scope ``p``."""
    from powercontext.store.oceanbase import native_fulltext

    return native_fulltext.search(store._reader(), "atomic_memory_fts", _tag("p"), query_terms(query), 10)


def _tag(scope_id: str) -> str:
    from powercontext.store.core.memory_rows import scope_tag

    return scope_tag(scope_id)


@pytest.mark.parametrize(
    ("url", "fulltext", "database"),
    [
        ("seekdb:///var/pc?fulltext=native", "native", "powercontext"),
        ("seekdb:///var/pc?database=team&fulltext=native", "native", "team"),
        ("seekdb:///var/pc?fulltext=exact", "exact", "powercontext"),
        ("oceanbase://pc@db.internal:2881/team?fulltext=native", "native", "team"),
        ("oceanbase://pc@db.internal:2881/team", "exact", "team"),
    ],
)
def test_store_urls_carry_the_fulltext_choice(url: str, fulltext: str, database: str) -> None:
    where = parse_store_url(url)
    assert (where.fulltext, where.database) == (fulltext, database)
    assert parse_store_url(where.display()) == where  # the logged form parses back to the same place


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("seekdb:///var/pc?fulltext=fast", "?fulltext= is exact (the default) or native"),
        ("sqlite:///var/pc.db?fulltext=native", "a sqlite URL takes none"),
        ("oceanbase://pc@h/db?database=x", "a oceanbase URL takes ?fulltext="),
        ("seekdb:///var/pc?fulltext=native&fulltext=exact", "unknown or repeated"),
    ],
)
def test_bad_fulltext_parameters_are_refused_with_the_valid_forms(url: str, message: str) -> None:
    from powercontext.store.location import BadStoreUrl

    with pytest.raises(BadStoreUrl) as refused:
        parse_store_url(url)
    assert message in str(refused.value)
