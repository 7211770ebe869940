"""A query the local (English) model cannot read is searched by full text alone under ``auto``.

Found by a new user: in a Scope of two Chinese memories, "今天天气怎么样" (what's the weather like today) injected
both, since all-MiniLM-L6-v2 puts unrelated Chinese sentences at cosines of 0.45-0.85, over the floor. The Server
runs the real local model, as the README's does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from powercontext.search.model_scripts import model_reads
from tests.conftest import live_server
from tests.support import Api, artifact_id, strict_json

LEDGER = "我们决定使用PostgreSQL作为账本数据库。"
SETTLEMENT = "结算任务每天凌晨两点运行。"
MEMORY_ONLY = {"sections": [{"family": "memory", "limit": 8}]}


@pytest.fixture(scope="module")
def chinese_scope(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Api, str, str, str]]:
    with live_server(tmp_path_factory.mktemp("model-scripts"), {"POWERCONTEXT_EMBEDDINGS": "local"}) as live:
        api = Api(live.base_url)
        sid = api.new_scope(prefix="zh")
        ledger = artifact_id(api.add(sid, LEDGER, "decision"))
        settlement = artifact_id(api.add(sid, SETTLEMENT, "fact"))
        api.add(sid, "Releases go out through the blue/green deploy pipeline.", "fact")
        yield api, sid, ledger, settlement
        api.close()


def _prepare(api: Api, sid: str, query: str) -> dict[str, Any]:
    r = api.prepare(sid, query, assembly=MEMORY_ONLY, include_receipt=True)
    assert r.status_code == 200, r.text
    return strict_json(r.content)


def _memory_search(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(g["mode"], g["fallback_reason"]) for g in body["receipt"]["retrieval"]["searches"]]


def test_a_chinese_question_nothing_answers_injects_nothing(chinese_scope: tuple[Api, str, str, str]) -> None:
    api, sid, _, _ = chinese_scope
    body = _prepare(api, sid, "今天天气怎么样")
    assert body["status"] == "empty"
    assert _memory_search(body) == [("fts", "none")]  # RFC 1435: FTS chosen normally under auto


def test_a_chinese_question_finds_its_memory_by_full_text_alone(chinese_scope: tuple[Api, str, str, str]) -> None:
    api, sid, ledger, _ = chinese_scope
    body = _prepare(api, sid, "账本数据库用的是什么？")
    selected = [s["artifact_address"]["artifact"]["artifact_id"] for s in body["receipt"]["selected"]]
    assert selected == [ledger]
    assert _memory_search(body) == [("fts", "none")]


def test_english_questions_stay_hybrid_and_an_explicit_mode_is_kept(chinese_scope: tuple[Api, str, str, str]) -> None:
    api, sid, _, _ = chinese_scope
    assert _memory_search(_prepare(api, sid, "how do we ship to production")) == [("hybrid", "none")]
    searched = api.search(sid, "今天天气怎么样", mode="vector")
    assert searched.status_code == 200 and searched.json()["mode"] == "vector"  # asked for: still answered


@pytest.mark.parametrize(
    ("text", "reads"),
    [
        ("How do users log in?", True),
        ("Wie melden sich Benutzer an? Größe, Übersicht", True),  # Latin script with accents
        ("今天天气怎么样", False),
        ("Как пользователи входят?", False),
        ("PostgreSQL 账本数据库", False),  # one English name in a Chinese question
        ("我们用什么 GraphQL 网关？", False),  # as many letters as characters, but one word against seven
        ("用Redis做什么", False),
        ("What did 王芳 say about the deploy?", True),  # a Chinese name in an English question
        ("Postgres 作为我们的账本数据库", False),
        ("12345 ?!", True),  # no letters: nothing to decide against
    ],
)
def test_the_local_model_reads_latin_script_text(text: str, reads: bool) -> None:
    assert model_reads("local:all-MiniLM-L6-v2:int8-v1", text) is reads
    assert model_reads("openai-compatible:some-multilingual-model", text)  # a provider's languages are unknown
