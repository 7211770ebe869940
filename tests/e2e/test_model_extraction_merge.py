"""Model-proposed merges in extraction (a fake OpenAI-compatible model the test scripts), over a real Server.

The model merges numbered related memories into one statement: the Server applies it through the same merge the
API offers (the inputs become ``merged``, out of search; the new memory records their exact revisions), with the
Source as lineage after the inputs' own evidence. A merge the model proposed from revisions that changed while it
answered is refused whole by the compare-and-swap, and the Source is extracted again, writing one merge.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.chat_fixture import ChatServer
from tests.conftest import LiveServer, live_server
from tests.e2e import test_model_extraction as shared
from tests.e2e.test_model_extraction import _capture, _settled
from tests.seekdb_support import new_engine_dir, require_seekdb
from tests.support import Api, wait_until

chat = shared.chat


@pytest.fixture(scope="module", params=["sqlite", "seekdb"])
def model_server(
    request: pytest.FixtureRequest, chat: ChatServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    """A Server extracting with the scripted model, writes applied at once, on either store."""
    base = tmp_path_factory.mktemp(f"merge-{request.param}")
    store = None
    if request.param == "seekdb":
        require_seekdb()
        store = f"seekdb://{new_engine_dir(base)}"
    settings = {
        "POWERCONTEXT_GENERATION": "openai-compatible",
        "POWERCONTEXT_GENERATION_BASE_URL": chat.base_url,
        "POWERCONTEXT_GENERATION_MODEL": "extract-model",
        "POWERCONTEXT_EXTRACTION_REVIEW": "none",
    }
    with live_server(base, settings, store=store) as live:
        yield live

MERGED = "Deploys are on Tuesdays at 10:00 UTC"


def _ops(*ops: dict[str, Any]) -> dict[str, Any]:
    return {"mode": "operations", "operations": list(ops)}


def _two_memories(api: Api, chat: ChatServer, scope_id: str) -> tuple[list[str], list[str]]:
    """Two model-extracted memories about deploys: (their artifact ids, their Sources)."""
    chat.control(
        script=[
            _ops({"op": "create", "text": "Deploys are on Tuesdays", "kind": "fact"}),
            _ops({"op": "create", "text": "Deploys start at 10:00 UTC", "kind": "fact"}),
        ]
    )
    first = _capture(api, scope_id, "fyi deploys are on tuesdays", "2026-01-05T09:00:00Z")
    (a,) = _settled(api, scope_id, first)["extraction"]["writes"]
    second = _capture(api, scope_id, "deploys start at 10:00 UTC", "2026-01-06T09:00:00Z")
    (b,) = _settled(api, scope_id, second)["extraction"]["writes"]
    return [a["artifact"]["artifact_id"], b["artifact"]["artifact_id"]], [first, second]


def _merge_step() -> dict[str, Any]:
    return _ops({"op": "merge", "matches": ["on Tuesdays", "10:00 UTC"], "text": MERGED, "kind": "fact"})


def _inputs(addresses: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return sorted((m["artifact"]["artifact_id"], m["artifact"]["revision"]) for m in addresses)


def _active_texts(api: Api, scope_id: str) -> list[str]:
    return [m["text"] for m in api.get(f"/v1/scopes/{scope_id}/atomic-memory").json()["items"]]


def test_a_model_merge_replaces_the_exact_revisions_with_lineage(model_server: LiveServer, chat: ChatServer) -> None:
    api = Api(model_server.base_url)
    try:
        scope_id = api.new_scope()
        chat.reset()
        (a, b), (first, second) = _two_memories(api, chat, scope_id)
        chat.control(script=[_merge_step()])
        third = _capture(api, scope_id, "deploys: tuesdays, 10:00 UTC, same thing", "2026-02-01T09:00:00Z")
        (written,) = _settled(api, scope_id, third)["extraction"]["writes"]
        merged_id = written["artifact"]["artifact_id"]
        assert written["artifact"]["revision"] == 1 and merged_id not in (a, b)
        head = api.head(scope_id, merged_id).json()
        assert (head["text"], head["state"], head["observed_at"]) == (MERGED, "active", "2026-02-01T09:00:00.000Z")
        assert _inputs(head["merged_from"]) == sorted([(a, 1), (b, 1)])
        assert sorted(ref["source_id"] for ref in head["source_refs"][:2]) == sorted([first, second])
        assert head["source_refs"][-1]["source_id"] == third and len(head["source_refs"]) == 3
        for old in (a, b):
            read = api.head(scope_id, old).json()
            assert (read["state"], read["merged_into"]) == ("merged", merged_id)
        assert _active_texts(api, scope_id) == [MERGED]
        told = chat.bodies()[-1]["messages"]
        assert '"op": "merge"' in told[0]["content"]  # the built-in Prompt offers the merge
    finally:
        api.close()


def test_a_stale_merge_is_refused_and_the_source_extracted_again_once(
    model_server: LiveServer, chat: ChatServer
) -> None:
    api = Api(model_server.base_url)
    try:
        scope_id = api.new_scope()
        chat.reset()
        (a, b), _ = _two_memories(api, chat, scope_id)
        before = chat.requests()
        # The first answer is built from what the model was shown (a@1, b@1) and arrives after a@1 changed.
        chat.control(script=[{"mode": "stall", "delay_s": 2.0, "then": _merge_step()}, _merge_step()])
        third = _capture(api, scope_id, "deploys: tuesdays, 10:00 UTC, same thing", "2026-02-01T09:00:00Z")
        assert wait_until(lambda: chat.requests() > before, timeout=20)
        revised = api.http.put(
            f"/v1/scopes/{scope_id}/atomic-memory/{a}", json={"text": "Deploys are on Tuesdays", "expected_revision": 1}
        )
        assert revised.status_code == 200, revised.text

        def extraction() -> dict[str, Any]:
            return dict(api.get(f"/v1/scopes/{scope_id}/sources/{third}").json()["extraction"])

        assert wait_until(lambda: extraction()["reason"] == "revision-conflict", timeout=20), extraction()
        assert sorted(_active_texts(api, scope_id)) == sorted(["Deploys are on Tuesdays", "Deploys start at 10:00 UTC"])
        settled = _settled(api, scope_id, third)["extraction"]
        assert settled["attempts"] == 2 and len(settled["writes"]) == 1
        merged = api.head(scope_id, settled["writes"][0]["artifact"]["artifact_id"]).json()
        assert _inputs(merged["merged_from"]) == sorted([(a, 2), (b, 1)])
        assert _active_texts(api, scope_id) == [MERGED]
        assert chat.requests() == before + 2
    finally:
        chat.reset()
        api.close()


def test_a_merge_waiting_for_review_names_the_exact_revisions_and_applies_on_approval(
    model_server: LiveServer, chat: ChatServer
) -> None:
    api = Api(model_server.base_url)
    try:
        scope_id = api.new_scope()
        chat.reset()
        (a, b), _ = _two_memories(api, chat, scope_id)
        review = {"explicit": "apply", "model": "review"}
        policy = api.http.put(f"/v1/scopes/{scope_id}/extraction-policy", json=review)
        assert policy.status_code == 200, policy.text
        chat.control(script=[_merge_step()])
        third = _capture(api, scope_id, "deploys: tuesdays, 10:00 UTC, same thing", "2026-02-01T09:00:00Z")
        assert _settled(api, scope_id, third)["extraction"]["reason"] == "in-review"
        (candidate,) = api.get(f"/v1/scopes/{scope_id}/memory-candidates").json()["items"]
        operation = candidate["operation"]
        assert (operation["op"], operation["text"], operation["kind"], operation["target"]) == (
            "merge", MERGED, "fact", None
        )
        assert _inputs(operation["merged"]) == sorted([(a, 1), (b, 1)])
        assert sorted(_active_texts(api, scope_id)) == sorted(["Deploys are on Tuesdays", "Deploys start at 10:00 UTC"])
        path = f"/v1/scopes/{scope_id}/memory-candidates/{candidate['candidate_id']}/approve"
        approved = api.post(path, {})
        assert approved.status_code == 200, approved.text
        result = approved.json()["result"]["artifact"]
        merged = api.head(scope_id, result["artifact_id"]).json()
        assert merged["text"] == MERGED and _inputs(merged["merged_from"]) == sorted([(a, 1), (b, 1)])
        assert [r["source_id"] for r in merged["source_refs"]][-1] == third and len(merged["source_refs"]) == 3
        assert _active_texts(api, scope_id) == [MERGED]
        assert api.post(path, {}).status_code == 409  # deciding twice writes nothing twice
    finally:
        api.close()
