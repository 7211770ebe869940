"""Short, generic chat turns ("Rafael: lol") no longer crowd out the turn that answers (search/crowding.py).

Found on the conversational suite: nearly every hybrid list began with a speaker's filler turns, which the local
model puts closer to any question naming that speaker than the turn that answers it. Here the answer is 8th by
cosine, behind seven of Rafael's filler turns. The Server runs the real
local model, as the README's does.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import live_server
from tests.support import Api, artifact_id, strict_json

ANSWER = "Rafael: Bad week: I sprained my ankle on the climbing wall. On the sofa with ice for a while."
QUERY = "What injury did Rafael pick up?"
FILLER = [
    "Rafael: lol",
    "Rafael: Wait, since when?",
    "Rafael: Really?!",
    "Rafael: No way, tell me more.",
    "Rafael: Hold on, I need details.",
    "Rafael: haha",
    "Rafael: Oh no, what happened?",
    "Rafael: Same here.",
    "Nadia: lol",
    "Nadia: Wait, since when?",
    "Nadia: Really?!",
    "Yuki: No way, tell me more.",
]
OTHER = [
    "Nadia: The Lebanese bakery by the market closed, sadly.",
    "Yuki: Started a pottery class on Thursdays, my first bowl is lopsided.",
    "Rafael: Our book club picked something dreadful this month.",
]
MEMORY_ONLY = {"sections": [{"family": "memory", "limit": 8}]}


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Api, str, str]]:
    with live_server(tmp_path_factory.mktemp("crowded"), {"POWERCONTEXT_EMBEDDINGS": "local"}) as live:
        api = Api(live.base_url)
        sid = api.new_scope(prefix="chat")
        for text in [*FILLER[:6], ANSWER, *FILLER[6:], *OTHER]:
            created = api.add(sid, text, "note")
            if text == ANSWER:
                answer = artifact_id(created)
        yield api, sid, answer
        api.close()


def test_the_answer_comes_before_the_speakers_filler_turns(chat: tuple[Api, str, str]) -> None:
    api, sid, answer = chat
    r = api.prepare(sid, QUERY, assembly=MEMORY_ONLY, include_receipt=True)
    assert r.status_code == 200, r.text
    body = strict_json(r.content)
    assert [g["mode"] for g in body["receipt"]["retrieval"]["searches"]] == ["hybrid"]
    selected = [s["artifact_address"]["artifact"]["artifact_id"] for s in body["receipt"]["selected"]]
    # Before, the eight items were the book club turn (a full-text match on "pick") and seven filler turns.
    assert answer in selected[:3], body["content"]


def test_a_vector_search_still_ranks_and_reports_by_cosine(chat: tuple[Api, str, str]) -> None:
    api, sid, answer = chat
    r = api.search(sid, QUERY, mode="vector", limit=20)
    assert r.status_code == 200, r.text
    hits = r.json()["hits"]
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)  # the cosine, as the relevance floor judges it
    ids = [h["artifact_address"]["artifact"]["artifact_id"] for h in hits]
    assert ids.index(answer) >= 5  # the filler turns are closer by cosine alone: only fusion discounts them
