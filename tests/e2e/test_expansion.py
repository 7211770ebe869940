"""Expansion rounds through a real Server subprocess (chat and embedding servers are real processes too),
and the all-or-nothing rule through an injected expander on a real uvicorn."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from powercontext.domain.candidates import Candidate
from powercontext.recall.expansion import ExpansionFailed
from powercontext.recall.trace import RecallTrace
from powercontext.store.sqlite import SqliteStore
from tests.chat_fixture import ChatServer, start_chat_server
from tests.conftest import StartInProcess, live_server
from tests.embedding_fixture import start_embedding_server
from tests.support import FOUR_KEYS, Api, strict_json

QUERY = "ship cadence"
MEMORY_ONLY = {"sections": [{"family": "memory", "limit": 8}]}
SHIP = "our ship cadence is weekly via the release train"
TRAIN = "the release train leaves on tuesdays from the platform branch"
MARKER = "EXPANDED-MARKER-6610"


def generation(chat: ChatServer, expansion: str) -> dict[str, str]:
    return {
        "POWERCONTEXT_GENERATION": "openai-compatible",
        "POWERCONTEXT_GENERATION_BASE_URL": chat.base_url,
        "POWERCONTEXT_GENERATION_MODEL": "gen-model",
        "POWERCONTEXT_EXPANSION": expansion,
    }


@pytest.fixture(scope="module")
def chat() -> Iterator[ChatServer]:
    with start_chat_server() as server:
        yield server


def seed(api: Api) -> tuple[str, str, str]:
    sid = api.new_scope()
    ship = api.add(sid, SHIP, "fact")["artifact_address"]["artifact"]["artifact_id"]
    train = api.add(sid, TRAIN, "fact")["artifact_address"]["artifact"]["artifact_id"]
    return sid, ship, train


def prepare(api: Api, sid: str, **extra: Any) -> dict[str, Any]:
    r = api.prepare(sid, QUERY, include_receipt=True, **extra)
    assert r.status_code == 200, r.text
    body = strict_json(r.content)
    assert "receipt" in body, "the Receipt was dropped"
    return body


def selected(body: dict[str, Any]) -> list[str]:
    return [s["artifact_address"]["artifact"]["artifact_id"] for s in body["receipt"]["selected"]]


def atomic_searches(body: dict[str, Any]) -> list[tuple[int, str, str]]:
    return [
        (g["round"], g["mode"], g["fallback_reason"])
        for g in body["receipt"]["retrieval"]["searches"]
        if g["family"] == "atomic-memory"
    ]


def test_model_expansion_finds_what_round_zero_missed(tmp_path: Path, chat: ChatServer) -> None:
    chat.reset()
    chat.control(default={"mode": "answer", "content": '{"queries": ["release train ' + MARKER + '"]}'})
    with live_server(tmp_path, generation(chat, "model")) as live:
        api = Api(live.base_url)
        sid, ship, train = seed(api)
        plain = api.prepare(sid, QUERY)
        body = prepare(api, sid)
        log = live.log_text()
        api.close()
    assert len(chat.bodies()) == 2  # one expansion call per prepare; include_receipt adds none
    sent = chat.bodies()[1]["messages"]
    assert "alternative search queries" in sent[0]["content"] and QUERY in sent[1]["content"]
    assert {k: body[k] for k in FOUR_KEYS} == strict_json(plain.content)
    receipt = body["receipt"]
    assert selected(body) == [ship, train]  # round 0 first, then the new identity
    assert receipt["retrieval"]["rounds"] == [
        {"round": 0, "outcome": "completed", "retained": True},
        {"round": 1, "outcome": "completed", "retained": True},
    ]
    assert {g["round"] for g in receipt["retrieval"]["searches"]} == {0, 1}
    assert receipt["non_deterministic"] is True
    # Round 1 re-found the round-0 memory too: one exclusion event of a retained round.
    assert {(g["family"], g["reason"]): g["count"] for g in receipt["omitted"]}[("atomic-memory", "duplicate")] == 1
    for text in (str(receipt), log):
        assert MARKER not in text and "release train" not in text


@pytest.mark.parametrize(
    "step",
    [{"mode": "error"}, {"mode": "answer", "content": "try: release train"}, {"mode": "stall", "delay_s": 3}],
)
def test_a_failed_expansion_returns_the_round_zero_pool(tmp_path: Path, chat: ChatServer, step: Any) -> None:
    chat.reset()
    chat.control(default=step)
    settings = {**generation(chat, "model"), "POWERCONTEXT_GENERATION_TIMEOUT": "0.5"}
    with live_server(tmp_path, settings) as live:
        api = Api(live.base_url)
        sid, ship, _ = seed(api)
        body = prepare(api, sid, assembly=MEMORY_ONLY)
        api.close()
    receipt = body["receipt"]
    assert selected(body) == [ship]
    assert receipt["retrieval"]["rounds"] == [
        {"round": 0, "outcome": "completed", "retained": True},
        {"round": 1, "outcome": "expansion_failed", "retained": False},
    ]
    assert atomic_searches(body) == [(0, "fts", "none")]  # the round failed before it searched
    assert receipt["non_deterministic"] is True  # a model was asked


def test_reused_fts_fallback_over_three_rounds(tmp_path: Path, chat: ChatServer) -> None:
    chat.reset()
    chat.control(default={"mode": "answer", "content": '{"queries": ["release train", "platform branch"]}'})
    with start_embedding_server(32) as embeddings:
        settings = {
            **generation(chat, "model"),
            "POWERCONTEXT_EMBEDDINGS": "openai-compatible",
            "POWERCONTEXT_EMBEDDINGS_BASE_URL": embeddings.base_url,
            "POWERCONTEXT_EMBEDDINGS_MODEL": "fake-embed",
            "POWERCONTEXT_EMBEDDINGS_DIMENSION": "32",
            "POWERCONTEXT_EMBEDDINGS_COOLDOWN": "0",
        }
        with live_server(tmp_path, settings) as live:
            api = Api(live.base_url)
            sid = api.new_scope()
            api.add(sid, SHIP, "fact")
            embeddings.control(mode="error")
            before = embeddings.stats()["requests"]
            body = prepare(api, sid, assembly=MEMORY_ONLY)
            calls = embeddings.stats()["requests"] - before
            api.close()
    assert calls == 1  # round 0 asked once; later rounds reuse that failure
    assert atomic_searches(body) == [
        (0, "fts", "inference_unavailable"),
        (1, "fts", "reused_fts_fallback"),
        (2, "fts", "reused_fts_fallback"),
    ]
    assert [r["outcome"] for r in body["receipt"]["retrieval"]["rounds"]] == ["completed"] * 3


def test_widen_is_model_free(tmp_path: Path) -> None:
    with live_server(tmp_path, {"POWERCONTEXT_EXPANSION": "widen"}) as live:
        api = Api(live.base_url)
        sid, ship, train = seed(api)
        body = prepare(api, sid, assembly=MEMORY_ONLY)
        api.close()
    receipt = body["receipt"]
    assert selected(body) == [ship, train]
    assert receipt["retrieval"]["rounds"][:2] == [
        {"round": 0, "outcome": "completed", "retained": True},
        {"round": 1, "outcome": "completed", "retained": True},
    ]
    assert all(r["retained"] for r in receipt["retrieval"]["rounds"])
    assert receipt["non_deterministic"] is False


# -- all or nothing: abandoned rounds -----------------------------------------------------------------------------


class ScriptedExpander:
    """Round 1 searches a query that re-finds everything and more; round 2 fails when ``fail`` is set."""

    model_backed = False

    def __init__(self) -> None:
        self.mode = "off"

    def round_query(
        self, round: int, query: str, scope_id: str, seeds: Sequence[Candidate], trace: RecallTrace
    ) -> str | None:
        if self.mode == "off":
            return None
        if round == 2 and self.mode == "fail":
            raise ExpansionFailed("scripted")
        return f"{query} release train platform"


def test_abandoned_rounds_count_their_searches_but_not_their_pools(
    inprocess_server: StartInProcess, sqlite_store: SqliteStore
) -> None:
    expander = ScriptedExpander()
    live = inprocess_server(sqlite_store, expander=expander)
    sid = live.api.new_scope()
    for i in range(3):
        live.api.add(sid, f"ship cadence note {i} about the release train", "fact")
    live.api.add(sid, TRAIN, "fact")
    off = prepare(live.api, sid, assembly=MEMORY_ONLY)
    expander.mode = "fail"
    failed = prepare(live.api, sid, assembly=MEMORY_ONLY)
    expander.mode = "ok"
    kept = prepare(live.api, sid, assembly=MEMORY_ONLY)
    assert off["content"] == failed["content"] and selected(off) == selected(failed)
    assert failed["receipt"]["omitted"] == off["receipt"]["omitted"]  # the abandoned pools add nothing
    assert failed["receipt"]["retrieval"]["rounds"] == [
        {"round": 0, "outcome": "completed", "retained": True},
        {"round": 1, "outcome": "completed", "retained": False},
        {"round": 2, "outcome": "expansion_failed", "retained": False},
    ]
    assert atomic_searches(failed) == [(0, "fts", "none"), (1, "fts", "none")]  # round 1's search did run
    # When the rounds are retained, their re-found candidates are duplicates and the new one joins.
    duplicates = {(g["family"], g["reason"]): g["count"] for g in kept["receipt"]["omitted"]}
    assert duplicates[("atomic-memory", "duplicate")] >= 3
    assert len(selected(kept)) == len(selected(off)) + 1
