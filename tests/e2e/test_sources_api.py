"""Sources over HTTP on both backends: capture (redacted), exact read, list, and the explicit extraction with lineage.

A real Server on loopback extracts in its own background worker; the test only waits for the outcome.
"""

from __future__ import annotations

import hashlib
from typing import Any

from tests.conftest import LiveServer
from tests.support import Api, error_code, wait_until

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _capture(api: Api, scope_id: str, content: str, **extra: Any) -> dict[str, Any]:
    r = api.post(f"/v1/scopes/{scope_id}/sources", {"kind": "prompt", "content": content, **extra})
    assert r.status_code == 201, r.text
    return r.json()


def _source(api: Api, scope_id: str, source_id: str) -> dict[str, Any]:
    r = api.get(f"/v1/scopes/{scope_id}/sources/{source_id}")
    assert r.status_code == 200, r.text
    return r.json()


def _extracted(api: Api, scope_id: str, source_id: str, status: str = "done") -> dict[str, Any]:
    assert wait_until(lambda: _source(api, scope_id, source_id)["extraction"]["status"] == status, timeout=20)
    return _source(api, scope_id, source_id)


def test_a_remember_prompt_becomes_an_atomic_memory_with_lineage_and_is_prepared(backend_server: LiveServer) -> None:
    api = Api(backend_server.base_url)
    try:
        scope_id = api.new_scope()
        origin = {"host": "claude-code", "session_id": "sess-1", "turn": 3}
        created = _capture(
            api,
            scope_id,
            f"remember: deploys are on Tuesdays\nour key is {AWS_KEY}, and my token {GITHUB_TOKEN}",
            origin=origin,
            observed_at="2026-03-02T10:00:00Z",
        )
        assert created["origin"] == origin and created["kind"] == "prompt"
        assert created["observed_at"] == "2026-03-02T10:00:00.000Z"
        assert {r["type"]: r["count"] for r in created["redactions"]} == {"AWS Access Key": 1, "GitHub Token": 1}
        source = _extracted(api, scope_id, created["source_id"])
        assert AWS_KEY not in source["content"] and GITHUB_TOKEN not in source["content"]
        assert "[redacted: AWS Access Key]" in source["content"]
        assert source["content_digest"] == hashlib.sha256(source["content"].encode()).hexdigest()
        (address,) = source["extraction"]["writes"]
        memory = api.read_address(address)
        assert memory["text"] == "deploys are on Tuesdays"
        assert memory["observed_at"] == "2026-03-02T10:00:00.000Z"  # the Source's time, not the extraction's
        (ref,) = memory["source_refs"]
        assert ref == {k: created[k] for k in ("scope_id", "source_id", "kind", "observed_at", "origin")}
        prepared = api.prepare(scope_id, "when are deploys?")
        assert prepared.status_code == 200 and "deploys are on Tuesdays" in prepared.json()["content"]
        explained = api.post("/v1/context/explain", {"scope_id": scope_id, "query": "when are deploys?"}).json()
        (candidate,) = [c for c in explained["candidates"] if c["artifact_address"] == address]
        assert candidate["fate"]["outcome"] == "selected" and candidate["source_refs"] == [ref]
        assert AWS_KEY not in backend_server.log_text() and "Tuesdays" not in backend_server.log_text()
    finally:
        api.close()


def test_other_sources_wait_for_a_model_and_the_list_pages_newest_first(backend_server: LiveServer) -> None:
    api = Api(backend_server.base_url)
    try:
        scope_id = api.new_scope()
        chat = _capture(api, scope_id, "can you look at the failing build?")
        reply = api.post(
            f"/v1/scopes/{scope_id}/sources", {"kind": "reply", "content": "remember: this is the agent talking"}
        ).json()
        for waiting in (chat, reply):  # a reply is never read as a user's statement
            source = _extracted(api, scope_id, waiting["source_id"], status="pending")
            assert wait_until(
                lambda w=waiting: _source(api, scope_id, w["source_id"])["extraction"]["reason"] == "waiting-for-model"
            )
            assert source["extraction"]["writes"] == []
        third = _capture(api, scope_id, "note: the staging database is pg-2")
        first_page = api.get(f"/v1/scopes/{scope_id}/sources?limit=2").json()
        assert [s["source_id"] for s in first_page["items"]] == [third["source_id"], reply["source_id"]]
        assert "content" not in first_page["items"][0]
        rest = api.get(f"/v1/scopes/{scope_id}/sources?limit=2&cursor={first_page['next_cursor']}").json()
        assert [s["source_id"] for s in rest["items"]] == [chat["source_id"]] and rest["next_cursor"] is None
    finally:
        api.close()


def test_bad_sources_are_refused_with_stable_codes(api: Api) -> None:
    scope_id = api.new_scope()
    too_big = api.post(f"/v1/scopes/{scope_id}/sources", {"kind": "note", "content": "x" * (64 * 1024 + 1)})
    assert too_big.status_code == 422 and error_code(too_big) == "invalid-request"
    assert "65536" in too_big.json()["error"]["message"]
    bad_kind = api.post(f"/v1/scopes/{scope_id}/sources", {"kind": "email", "content": "hi"})
    assert bad_kind.status_code == 422
    missing = api.post("/v1/scopes/no-such-scope-here/sources", {"kind": "note", "content": "hi"})
    assert missing.status_code == 404 and error_code(missing) == "scope-not-found"
    unknown = api.get(f"/v1/scopes/{scope_id}/sources/src_nothing")
    assert unknown.status_code == 404 and error_code(unknown) == "source-not-found"


def test_a_purged_source_is_erased_for_good_and_never_extracted(server: LiveServer) -> None:
    api = Api(server.base_url)
    try:
        scope_id = api.new_scope()
        marker = "zqxj-purge-marker-" + scope_id
        created = _capture(api, scope_id, f"the vendor contract number is {marker}")
        purged = api.post(f"/v1/scopes/{scope_id}/sources/{created['source_id']}/purge", {})
        assert purged.status_code == 200, purged.text
        assert purged.json()["extraction"]["reason"] == "purged" and purged.json()["content_digest"] == ""
        gone = api.get(f"/v1/scopes/{scope_id}/sources/{created['source_id']}")
        assert gone.status_code == 410 and error_code(gone) == "purged"
        again = api.post(f"/v1/scopes/{scope_id}/sources/{created['source_id']}/purge", {})
        assert again.status_code == 200 and again.json()["extraction"]["reason"] == "purged"
        listed = api.get(f"/v1/scopes/{scope_id}/sources").json()["items"]
        assert [s["extraction"]["reason"] for s in listed] == ["purged"]
        db = server.db_path
        for path in (db, db.with_name(db.name + "-wal")):
            if path.exists():
                assert marker.encode() not in path.read_bytes(), f"{path.name} still holds the purged content"
    finally:
        api.close()
