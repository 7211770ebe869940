"""Extraction with a generation model (a fake OpenAI-compatible server the test scripts), over a real Server.

The model is shown the Source and the related active memories by number, answers operations, and the Server
applies them with lineage: a changed fact revises the old memory (revision 2, lineage to both Sources). A failed
model call leaves the Source pending with its reason, and it is extracted on a later attempt.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.chat_fixture import ChatServer, start_chat_server
from tests.conftest import LiveServer, live_server
from tests.support import Api, wait_until


@pytest.fixture(scope="module")
def chat() -> Iterator[ChatServer]:
    with start_chat_server() as server:
        yield server


@pytest.fixture(scope="module")
def model_server(chat: ChatServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    settings = {
        "POWERCONTEXT_GENERATION": "openai-compatible",
        "POWERCONTEXT_GENERATION_BASE_URL": chat.base_url,
        "POWERCONTEXT_GENERATION_MODEL": "extract-model",
        "POWERCONTEXT_GENERATION_API_KEY": "sk-extract-secret-2718",
        "POWERCONTEXT_EXTRACTION_REVIEW": "none",  # applied at once (the review inbox has its own tests)
    }
    with live_server(tmp_path_factory.mktemp("model-extraction"), settings) as live:
        yield live


def _operations(*ops: dict[str, Any]) -> dict[str, Any]:
    return {"mode": "answer", "content": json.dumps({"operations": list(ops)})}


def _capture(api: Api, scope_id: str, content: str, observed_at: str) -> str:
    r = api.post(f"/v1/scopes/{scope_id}/sources", {"kind": "prompt", "content": content, "observed_at": observed_at})
    assert r.status_code == 201, r.text
    return str(r.json()["source_id"])


def _settled(api: Api, scope_id: str, source_id: str) -> dict[str, Any]:
    def read() -> dict[str, Any]:
        return dict(api.get(f"/v1/scopes/{scope_id}/sources/{source_id}").json())

    assert wait_until(lambda: read()["extraction"]["status"] == "done", timeout=30), read()
    return read()


def test_a_changed_fact_revises_the_memory_with_lineage_to_both_sources(
    model_server: LiveServer, chat: ChatServer
) -> None:
    api = Api(model_server.base_url)
    try:
        scope_id = api.new_scope()
        chat.reset()
        chat.control(script=[_operations({"op": "create", "text": "Deploys are on Tuesdays", "kind": "fact"})])
        first = _capture(api, scope_id, "fyi our deploys happen on tuesdays", "2026-01-05T09:00:00Z")
        (created,) = _settled(api, scope_id, first)["extraction"]["writes"]
        artifact_id = created["artifact"]["artifact_id"]
        chat.control(script=[_operations({"op": "revise", "memory": 1, "text": "Deploys are on Thursdays"})])
        second = _capture(api, scope_id, "heads up: deploys moved to thursdays", "2026-02-05T09:00:00Z")
        (revised,) = _settled(api, scope_id, second)["extraction"]["writes"]
        assert revised["artifact"] == {"family": "atomic-memory", "artifact_id": artifact_id, "revision": 2}
        head = api.head(scope_id, artifact_id).json()
        assert (head["text"], head["head_revision"]) == ("Deploys are on Thursdays", 2)
        assert head["observed_at"] == "2026-02-05T09:00:00.000Z"
        assert [ref["source_id"] for ref in head["source_refs"]] == [first, second]
        old = api.revision(scope_id, artifact_id, 1).json()
        assert [ref["source_id"] for ref in old["source_refs"]] == [first]
        bodies = chat.bodies()
        told = bodies[-1]["messages"][-1]["content"]  # the model saw the memory by number, and the new Source
        assert "[1] (fact, observed 2026-01-05T09:00:00.000Z) Deploys are on Tuesdays" in told
        assert "deploys moved to thursdays" in told and bodies[-1]["model"] == "extract-model"
        assert "thursdays" not in model_server.log_text().lower()
    finally:
        api.close()


def test_a_failed_model_call_leaves_the_source_pending_and_it_is_retried(
    model_server: LiveServer, chat: ChatServer
) -> None:
    api = Api(model_server.base_url)
    try:
        scope_id = api.new_scope()
        chat.reset()
        chat.control(
            script=[{"mode": "error"}, _operations({"op": "create", "text": "Staging is pg-2", "kind": "fact"})]
        )
        source_id = _capture(api, scope_id, "staging runs on pg-2 now", "2026-03-01T00:00:00Z")

        def read() -> dict[str, Any]:
            return dict(api.get(f"/v1/scopes/{scope_id}/sources/{source_id}").json()["extraction"])

        assert wait_until(lambda: read()["reason"] is not None or read()["status"] == "done", timeout=20), read()
        settled = _settled(api, scope_id, source_id)["extraction"]
        assert settled["attempts"] == 2 and len(settled["writes"]) == 1
        assert [m["text"] for m in api.get(f"/v1/scopes/{scope_id}/atomic-memory").json()["items"]] == [
            "Staging is pg-2"
        ]
    finally:
        api.close()


def test_an_answer_outside_the_contract_applies_nothing(model_server: LiveServer, chat: ChatServer) -> None:
    api = Api(model_server.base_url)
    try:
        scope_id = api.new_scope()
        chat.reset()
        bad = _operations({"op": "create", "text": "Kept"}, {"op": "revise", "memory": 9, "text": "no such memory"})
        chat.control(default=bad)
        source_id = _capture(api, scope_id, "something worth keeping", "2026-03-01T00:00:00Z")

        def read() -> dict[str, Any]:
            return dict(api.get(f"/v1/scopes/{scope_id}/sources/{source_id}").json()["extraction"])

        assert wait_until(lambda: read()["reason"] == "invalid_output", timeout=20), read()
        assert read()["status"] == "pending" and read()["writes"] == []
        assert api.get(f"/v1/scopes/{scope_id}/atomic-memory").json()["items"] == []
    finally:
        chat.reset()
        api.close()


def test_by_default_model_extracted_writes_wait_for_review(
    chat: ChatServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    settings = {
        "POWERCONTEXT_GENERATION": "openai-compatible",
        "POWERCONTEXT_GENERATION_BASE_URL": chat.base_url,
        "POWERCONTEXT_GENERATION_MODEL": "extract-model",
    }
    chat.reset()
    chat.control(default=_operations({"op": "create", "text": "Releases are cut from main", "kind": "fact"}))
    try:
        with live_server(tmp_path_factory.mktemp("default-review"), settings) as live:
            api = Api(live.base_url)
            scope_id = api.new_scope()
            source_id = _capture(api, scope_id, "we cut releases from main", "2026-03-01T00:00:00Z")
            settled = _settled(api, scope_id, source_id)["extraction"]
            assert (settled["reason"], settled["writes"]) == ("in-review", [])
            (candidate,) = api.get(f"/v1/scopes/{scope_id}/memory-candidates").json()["items"]
            assert candidate["operation"]["text"] == "Releases are cut from main"
            assert api.get(f"/v1/scopes/{scope_id}/atomic-memory").json()["items"] == []
            assert api.get("/v1/capabilities").json()["extraction"]["extractor"] == "model"
            api.close()
    finally:
        chat.reset()
