"""Rerank groups state the invocations that happened, and the model-call limit holds, through a real Server
subprocess and a real fake chat server that counts every call it receives.

The RFC: rerank groups "summarize actual rerank invocations … No invocation means no group or config." A Scope
that was never sent to the model (the provider already failed in this prepare, or a request limit was reached)
has no group; its candidates keep their coarse order and are counted as an unreranked pool (``family_limit``
beyond the Atomic Memory entry cap, never ``rerank_not_selected``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.chat_fixture import ChatServer, start_chat_server
from tests.conftest import live_server
from tests.support import Api, strict_json

QUERY = "how does the deploy pipeline work"
MEMORY_ONLY = {"sections": [{"family": "memory", "limit": 8}]}
PER_SCOPE = 20  # above the Atomic Memory cap of 16 a Scope keeps without rerank, within the rerank pool of 30
ATOMIC_CAP = 16


def chat_settings(chat: ChatServer, **extra: str) -> dict[str, str]:
    return {
        "POWERCONTEXT_GENERATION": "openai-compatible",
        "POWERCONTEXT_GENERATION_BASE_URL": chat.base_url,
        "POWERCONTEXT_GENERATION_MODEL": "gen-model",
        "POWERCONTEXT_RERANK": "listwise",
        **extra,
    }


@pytest.fixture(scope="module")
def chat() -> Iterator[ChatServer]:
    with start_chat_server() as server:
        yield server


def seed_scopes(api: Api, count: int, per_scope: int = PER_SCOPE) -> str:
    """``count`` Scopes (the request Scope referencing the others), each with ``per_scope`` deploy memories,
    every other one about zebras; returns the request Scope."""
    references: list[str] = []
    for _ in range(count - 1):
        references.append(_seeded(api, (), per_scope))
    return _seeded(api, tuple(references), per_scope)


def _seeded(api: Api, references: tuple[str, ...], per_scope: int) -> str:
    sid = api.new_scope(references)
    items = [
        {"text": f"the deploy pipeline step {i} runs checks" + (" zebra canary" if i % 2 else ""), "kind": "fact"}
        for i in range(per_scope)
    ]
    r = api.http.post(f"/v1/scopes/{sid}/atomic-memory/batch", json={"items": items})
    assert r.is_success, r.text
    return sid


def prepare(api: Api, sid: str) -> dict[str, Any]:
    r = api.prepare(sid, QUERY, assembly=MEMORY_ONLY, include_receipt=True)
    assert r.status_code == 200, r.text
    body = strict_json(r.content)
    assert "receipt" in body, "the Receipt was dropped"
    return body


def reranks(body: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [(g["outcome"], g["fallback_reason"], g["count"]) for g in body["receipt"]["retrieval"]["reranks"]]


def omitted(body: dict[str, Any]) -> dict[tuple[str, str], int]:
    return {(g["family"], g["reason"]): g["count"] for g in body["receipt"]["omitted"]}


@pytest.mark.parametrize(
    ("step", "reason"),
    [({"mode": "error"}, "inference_unavailable"), ({"mode": "stall", "delay_s": 3.0}, "inference_timeout")],
)
def test_a_failing_model_gets_one_group_for_its_one_call(
    tmp_path: Path, chat: ChatServer, step: dict[str, Any], reason: str
) -> None:
    with live_server(tmp_path, chat_settings(chat, POWERCONTEXT_RERANK_TIMEOUT="1")) as live:
        api = Api(live.base_url)
        sid = seed_scopes(api, 3)
        chat.reset()
        chat.control(default=step)
        body = prepare(api, sid)
        api.close()
    assert chat.requests() == 1  # the failed provider is not asked again in this prepare
    assert reranks(body) == [("failed", reason, 1)]  # one invocation, one group; never three
    assert len(body["receipt"]["retrieval"]["rerank_configs"]) == 1
    # Every Scope keeps its coarse pool cut at the cap (the failed one and the two never sent alike), then the
    # section keeps 8 of the 3 x 16.
    assert omitted(body) == {("atomic-memory", "family_limit"): 3 * (PER_SCOPE - ATOMIC_CAP) + 3 * ATOMIC_CAP - 8}
    chat.reset()


def test_scopes_beyond_the_rerank_limit_are_not_invoked_and_keep_their_coarse_order(
    tmp_path: Path, chat: ChatServer
) -> None:
    settings = chat_settings(chat, POWERCONTEXT_RERANK_MAX_REQUESTS="1")
    with live_server(tmp_path, settings) as live:
        api = Api(live.base_url)
        sid = seed_scopes(api, 3)
        scopes = [sid, *api.http.get(f"/v1/scopes/{sid}").json()["context_references"]]
        coarse = {s: api.hit_ids(s, QUERY) for s in scopes}
        chat.reset()
        chat.control(default={"mode": "rank", "keyword": "zebra"})
        body = prepare(api, sid)
        zebras = {a for s in scopes for a in coarse[s] if "zebra" in str(api.head(s, a).json()["text"])}
        log = live.log_text()
        api.close()
    assert chat.requests() == 1
    # A working provider at its cap is not a dead one: the one call selected, nothing else is stated.
    assert reranks(body) == [("selected", "none", 1)]
    by_scope: dict[str, list[str]] = {s: [] for s in scopes}
    for item in body["receipt"]["selected"]:
        address = item["artifact_address"]
        by_scope[address["scope_id"]].append(address["artifact"]["artifact_id"])
    assert set(by_scope[scopes[0]]) <= zebras  # the reranked Scope: the model's choice
    for other in scopes[1:]:  # the two never sent: their coarse order
        assert by_scope[other] == coarse[other][: len(by_scope[other])] and by_scope[other]
    kept_zebras = PER_SCOPE // 2
    assert omitted(body) == {
        ("atomic-memory", "rerank_not_selected"): PER_SCOPE - kept_zebras,  # the one reranked Scope
        # the two unreranked pools cut at the cap, then the section keeps 8 of what is left
        ("atomic-memory", "family_limit"): 2 * (PER_SCOPE - ATOMIC_CAP) + kept_zebras + 2 * ATOMIC_CAP - 8,
    }
    assert "event=rerank.skipped reason=max_requests scopes=2" in log
    chat.reset()


def test_the_generation_limit_caps_expansion_and_rerank_together(tmp_path: Path, chat: ChatServer) -> None:
    settings = chat_settings(chat, POWERCONTEXT_EXPANSION="model", POWERCONTEXT_GENERATION_MAX_REQUESTS="8")
    with live_server(tmp_path, settings) as live:
        api = Api(live.base_url)
        sid = seed_scopes(api, 8, per_scope=4)  # thin pools: the expansion round runs
        chat.reset()
        expansion = {"mode": "answer", "content": '{"queries": ["deploy checks"]}'}
        chat.control(default={"mode": "rank", "keyword": "zebra"}, script=[expansion])
        body = prepare(api, sid)
        api.close()
    assert chat.requests() == 8  # one expansion call and seven rerank calls, not nine
    assert body["receipt"]["retrieval"]["rounds"][1] == {"round": 1, "outcome": "completed", "retained": True}
    # Each Scope's rerank has its own Prompt, so its own config and group: seven invocations, all selected.
    assert reranks(body) == [("selected", "none", 1)] * 7
    assert len(body["receipt"]["retrieval"]["rerank_configs"]) == 7
    chat.reset()


def test_a_deterministic_rerank_with_no_hits_is_no_stage(tmp_path: Path) -> None:
    with live_server(tmp_path, {"POWERCONTEXT_RERANK": "deterministic"}) as live:
        api = Api(live.base_url)
        sid = seed_scopes(api, 3, per_scope=2)
        r = api.prepare(sid, "nothing here matches xylophone", assembly=MEMORY_ONLY, include_receipt=True)
        hits = prepare(api, sid)
        api.close()
    receipt = strict_json(r.content)["receipt"]
    stages = {s["stage"]: s["count"] for s in receipt["stages"]}
    assert stages["memory.search"] == 3  # three searches, and no rerank ran
    assert receipt["retrieval"]["reranks"] == [] and receipt["retrieval"]["rerank_configs"] == []
    # With hits the rerank runs once, as one more instance of Memory search.
    assert {s["stage"]: s["count"] for s in hits["receipt"]["stages"]}["memory.search"] == 4
    assert reranks(hits) == [("selected", "none", 3)]
