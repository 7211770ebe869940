"""Topic Memory and Experience say nothing when nothing fits, like Atomic Memory: each family's search applies the
relevance floor (search/relevance.py), so a prepare for a question they do not answer injects neither.

Found by a new user's tour: the one Topic Memory of a Scope came with every prepare, "xyzzy plugh" included, since
its vector hit (cosine 0.11) had no floor. The Server runs the real local model (hybrid), as the README's does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import live_server
from tests.e2e.test_families_api import approve, new_topic, ok, sp
from tests.support import Api, artifact_id, strict_json

SETTLEMENT = "Nightly settlement runs at 02:00 UTC and reconciles the ledger against the bank's statement file."
LESSON = {
    "situation": "A database migration locked the invoices table during business hours",
    "what_worked": "Run migrations that rewrite a table in the maintenance window",
    "what_to_avoid": "Adding a column with a default to a large table at noon",
}
UNRELATED = (
    "xyzzy plugh",
    "What is the capital of Mongolia?",
    "Which visitor parking permit policy covers the tennis league?",
)


@pytest.fixture(scope="module")
def hybrid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Api, str, str, str]]:
    """A hybrid Server (the local model) and a Scope holding one Topic Memory, one Experience and one memory."""
    with live_server(tmp_path_factory.mktemp("family-floors"), {"POWERCONTEXT_EMBEDDINGS": "local"}) as live:
        api = Api(live.base_url)
        sid = api.new_scope(prefix="floors")
        topic = artifact_id(new_topic(api, sid, "Settlement", SETTLEMENT))
        experience = artifact_id(approve(api, sid, **LESSON))
        api.add(sid, "We chose SQLite as the embedded default store.", "decision")
        yield api, sid, topic, experience
        api.close()


def _selected(api: Api, sid: str, query: str) -> tuple[str, dict[str, list[str]]]:
    r = api.prepare(sid, query, include_receipt=True)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = strict_json(r.content)
    chosen: dict[str, list[str]] = {}
    for item in body["receipt"]["selected"]:
        chosen.setdefault(item["family"], []).append(item["artifact_address"]["artifact"]["artifact_id"])
    return body["status"], chosen


@pytest.mark.parametrize("query", UNRELATED)
def test_a_question_the_families_do_not_answer_injects_none_of_them(
    hybrid: tuple[Api, str, str, str], query: str
) -> None:
    api, sid, _, _ = hybrid
    status, chosen = _selected(api, sid, query)
    assert status == "empty", chosen
    topics = ok(api.http.post(sp(sid, "/topic-memory/search"), json={"query": query}))
    assert topics["mode"] == "hybrid" and topics["hits"] == []
    assert ok(api.http.post(sp(sid, "/experience/search"), json={"query": query}))["hits"] == []


def test_a_question_they_answer_still_finds_them(hybrid: tuple[Api, str, str, str]) -> None:
    api, sid, topic, experience = hybrid
    assert _selected(api, sid, "When does the nightly settlement run?")[1].get("topic-memory") == [topic]
    # Shares no word with the topic: the vector channel vouches for it.
    assert _selected(api, sid, "At what hour is the ledger balanced each night?")[1].get("topic-memory") == [topic]
    found = _selected(api, sid, "Can I run a migration on the invoices table at noon?")[1]
    assert found.get("experience") == [experience]


def test_explain_shows_the_dropped_topic_against_its_floor(hybrid: tuple[Api, str, str, str]) -> None:
    api, sid, topic, _ = hybrid
    r = api.post("/v1/context/explain", {"scope_id": sid, "query": "What is the capital of Mongolia?"})
    assert r.status_code == 200, r.text
    dropped = [
        d for d in strict_json(r.content)["below_floor"] if d["artifact_address"]["artifact"]["artifact_id"] == topic
    ]
    assert [d["channel"] for d in dropped] == ["vector"]
    (reading,) = dropped[0]["readings"]
    assert reading["measure"] == "cosine" and reading["value"] < reading["floor"]
