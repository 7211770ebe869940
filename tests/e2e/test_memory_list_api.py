"""``GET /v1/scopes/{scope_id}/atomic-memory``: heads newest first, a page at a time, on each store backend."""

from __future__ import annotations

import httpx

from tests.conftest import LiveServer
from tests.support import unique


def test_pages_cover_every_head_once_while_writes_happen(backend_server: LiveServer) -> None:
    scope_id = unique("list")
    with httpx.Client(base_url=backend_server.base_url, timeout=60) as http:
        assert http.post("/v1/scopes", json={"scope_id": scope_id, "title": "List"}).status_code == 201
        path = f"/v1/scopes/{scope_id}/atomic-memory"
        ids = [http.post(path, json={"text": f"Listed fact {n}", "kind": "fact"}).json() for n in range(5)]
        ids = [m["artifact_address"]["artifact"]["artifact_id"] for m in ids]
        revised = http.put(f"{path}/{ids[1]}", json={"text": "Listed fact 1, revised", "expected_revision": 1})
        assert revised.status_code == 200, revised.text

        first = http.get(path, params={"limit": 2})
        assert first.status_code == 200, first.text
        page = first.json()
        assert [m["artifact_address"]["artifact"]["artifact_id"] for m in page["items"]] == [ids[4], ids[3]]
        # a write between pages appears on a fresh first page, not in the middle of this walk
        http.post(path, json={"text": "Written while paging", "kind": "fact"})
        seen = [m["artifact_address"]["artifact"]["artifact_id"] for m in page["items"]]
        while page["next_cursor"] is not None:
            page = http.get(path, params={"limit": 2, "cursor": page["next_cursor"]}).json()
            seen += [m["artifact_address"]["artifact"]["artifact_id"] for m in page["items"]]
            heads = {m["artifact_address"]["artifact"]["artifact_id"]: m for m in page["items"]}
            if ids[1] in heads:  # the head revision, not the first
                assert heads[ids[1]]["text"] == "Listed fact 1, revised"
                assert heads[ids[1]]["artifact_address"]["artifact"]["revision"] == 2
        assert seen == [ids[4], ids[3], ids[2], ids[1], ids[0]]

        missing = http.get(f"/v1/scopes/{unique('absent')}/atomic-memory")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "scope-not-found"
        for bad in ({"limit": 0}, {"limit": 201}, {"cursor": "x1"}, {"cursor": "9" * 19}, {"state": "gone"}):
            refused = http.get(path, params=bad)
            assert refused.status_code == 422, (bad, refused.text)
            assert refused.json()["error"]["code"] == "invalid-request"
