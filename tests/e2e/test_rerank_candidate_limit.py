"""A rerank ``candidate_limit`` below the coarse pool's 16 is what the model receives, and what the Receipt states.

A real Server subprocess calls the scripted chat server (tests/chat_server.py), which records every request: the
candidates a model received are the numbered lines of its user message.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chat_fixture import ChatServer, start_chat_server
from tests.chat_server import CANDIDATE_LINE
from tests.conftest import live_server
from tests.e2e.test_rerank import QUERY, chat_settings, omitted, prepare, selected_ids
from tests.support import Api


@pytest.fixture(scope="module")
def chat() -> Iterator[ChatServer]:
    with start_chat_server() as server:
        yield server


def seed_ten(api: Api) -> tuple[str, list[str]]:
    """Ten memories that all match the query; returns the Scope and their coarse (fts) order."""
    sid = api.new_scope(())
    for i in range(10):
        api.add(sid, f"the deploy pipeline stage {i} works through checks" + " deploy" * (i % 3), "fact")
    order = api.hit_ids(sid, QUERY)
    assert len(order) == 10
    return sid, order


@pytest.mark.parametrize("limit", [3, 7])
def test_the_model_receives_candidate_limit_candidates(tmp_path: Path, chat: ChatServer, limit: int) -> None:
    settings = chat_settings(chat, POWERCONTEXT_RERANK_SETTINGS=f'{{"candidate_limit": {limit}}}')
    with live_server(tmp_path, settings) as server:
        api = Api(server.base_url)
        try:
            sid, coarse = seed_ten(api)
            chat.reset()
            chat.control(default={"mode": "rank", "keyword": "", "reverse": True})
            body = prepare(api, sid, include_receipt=True)
        finally:
            api.close()
    (sent,) = chat.bodies()
    received = CANDIDATE_LINE.findall(sent["messages"][1]["content"])
    assert [int(n) for n, _ in received] == list(range(1, limit + 1))  # the coarse top `limit`, nothing more
    # The model ranked all it saw, in reverse: those are injected, the coarse tail it never saw is not.
    assert selected_ids(body) == coarse[:limit][::-1]
    assert omitted(body).get(("atomic-memory", "family_limit")) == 10 - limit
    assert ("atomic-memory", "rerank_not_selected") not in omitted(body)
    (config,) = body["receipt"]["retrieval"]["rerank_configs"]
    assert config["effective_settings"]["candidate_limit"] == limit
