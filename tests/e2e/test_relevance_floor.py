"""Recall that says nothing when nothing fits: function words, the relevance floor, and the explain view of both,
over HTTP against the real Server (fts; the vector floor's rule is checked in tests/unit/test_relevance_floor.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from powercontext.search.relevance import FTS_MASS_FLOOR, FTS_SHARE_FLOOR
from tests.conftest import LiveServer
from tests.support import Api, artifact_id, strict_json

NOTHING_ANSWERS = "What is the visitor parking permit policy at the downtown garage for the billing team?"
MEMORY_ONLY = {"sections": [{"family": "memory", "limit": 8}]}
LOGIN = "Keycloak signs users in through OAuth2; sessions last eight hours."


@pytest.fixture(scope="module")
def team_scope(server: LiveServer) -> Iterator[tuple[Api, str, str]]:
    """Twenty notes of the billing team that share its name, and one about sign-in."""
    api = Api(server.base_url)
    sid = api.new_scope(prefix="floor")
    for i in range(20):
        api.add(sid, f"The billing team moved invoice batch {i} to the new queue.", "note")
    login = artifact_id(api.add(sid, LOGIN, "fact"))
    yield api, sid, login
    api.close()


def _prepare(api: Api, sid: str, query: str) -> dict[str, Any]:
    r = api.prepare(sid, query, assembly=MEMORY_ONLY, include_receipt=True)
    assert r.status_code == 200, r.text
    return strict_json(r.content)


def test_a_query_nothing_answers_comes_back_empty(team_scope: tuple[Api, str, str]) -> None:
    api, sid, _ = team_scope
    # "billing team" is in 20 of 21 memories, the six other terms in none: every hit is weak evidence.
    body = _prepare(api, sid, NOTHING_ANSWERS)
    assert body["status"] == "empty"
    assert {"family": "atomic-memory", "reason": "not_retrieved", "count": 1} in body["receipt"]["omitted"]
    hits = api.search(sid, NOTHING_ANSWERS)
    assert hits.status_code == 200 and hits.json()["hits"] == []  # memory search applies the same floor


def test_a_query_a_memory_answers_still_finds_it(team_scope: tuple[Api, str, str]) -> None:
    api, sid, login = team_scope
    body = _prepare(api, sid, "How do users sign in?")
    assert body["status"] == "ready"
    selected = [s["artifact_address"]["artifact"]["artifact_id"] for s in body["receipt"]["selected"]]
    assert selected == [login]  # the billing notes match no query term: nothing else comes along


def test_function_words_neither_match_nor_retrieve(team_scope: tuple[Api, str, str]) -> None:
    api, sid, _ = team_scope
    # Every memory holds "the" (English) and none of these words carries a topic.
    assert _prepare(api, sid, "What is the one that we had to do there?")["status"] == "empty"
    assert _prepare(api, sid, "我们的是这个吗")["status"] == "empty"


def test_explain_lists_each_dropped_hit_against_the_floor(team_scope: tuple[Api, str, str]) -> None:
    api, sid, _ = team_scope
    body = {"scope_id": sid, "query": NOTHING_ANSWERS, "max_bytes": 8000}
    r = api.post("/v1/context/explain", {**body, "assembly": MEMORY_ONLY})
    assert r.status_code == 200, r.text
    explained = strict_json(r.content)
    assert explained["candidates"] == []
    dropped = explained["below_floor"]
    assert len(dropped) == 20 and {d["channel"] for d in dropped} == {"fts"}
    for d in dropped:
        readings = {x["measure"]: x for x in d["readings"]}
        assert readings["query_idf_share"]["floor"] == FTS_SHARE_FLOOR
        assert 0 < readings["query_idf_share"]["value"] < FTS_SHARE_FLOOR
        assert readings["matched_idf"]["floor"] == FTS_MASS_FLOOR
        assert 0 < readings["matched_idf"]["value"] < FTS_MASS_FLOOR
