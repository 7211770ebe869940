"""No query text or body text in Receipts, in the server's log, or in error bodies."""

from __future__ import annotations

import pytest

from tests.conftest import LiveServer
from tests.support import Api, receipt_bytes, unique

MARKERS = {
    "query": "ZEBRA-MARKER-7781",
    "body": "OKAPI-MARKER-3302",
    "tag": "NARWHAL-MARKER-6610",
    "cjk": "麒麟标记九九",
    "idem": "IBEX-MARKER-4478",
}


def _assert_no_markers(text: str, where: str) -> None:
    lowered = text.lower()
    for name, marker in MARKERS.items():
        assert marker.lower() not in lowered, f"{name} marker leaked into {where}"


def test_markers_never_reach_receipts_logs_or_errors(api: Api, server: LiveServer) -> None:
    b = api.new_scope()
    sid = api.new_scope([b])
    bodies = [
        f"{MARKERS['body']} deploy decision with secret wording",
        f"数据 {MARKERS['cjk']} 迁移计划",
        f"{MARKERS['body']} " + "long body " * 400,  # capped and truncated
    ]
    for text in bodies:
        api.add(sid, text, "decision", tags=[MARKERS["tag"]], idempotency_key=unique(MARKERS["idem"]))
        api.add(b, text, "fact")
    queries = [
        f"{MARKERS['query']} deploy",
        f"{MARKERS['body']} {MARKERS['query']}",
        f"数据 {MARKERS['cjk']}",
        f"{MARKERS['query']} " + "数据" * 3000,
        f"no match at all {MARKERS['query']}",
    ]
    errors: list[str] = []
    for query in queries:
        for max_bytes in (600, 8000):
            r = api.prepare(sid, query, max_bytes=max_bytes, include_receipt=True)
            assert r.status_code == 200, r.text
            body = r.json()
            assert "receipt" in body
            _assert_no_markers(receipt_bytes(r.content).decode("utf-8"), "a Receipt")
        search = api.search(sid, query)
        assert search.status_code == 200

    # Error paths whose input carries a marker.
    failing = [
        api.http.post(f"/v1/scopes/{sid}/atomic-memory", json={"text": MARKERS["body"], "kind": MARKERS["query"]}),
        api.http.post(f"/v1/scopes/{sid}/atomic-memory", json={"text": MARKERS["body"] + "x" * 8000, "kind": "note"}),
        api.http.post(
            f"/v1/scopes/{sid}/atomic-memory",
            json={"text": MARKERS["body"], "kind": "note", "tags": [MARKERS["tag"] + " with space"]},
        ),
        api.http.post(f"/v1/scopes/{sid}/atomic-memory", json={"text": [MARKERS["body"]], "kind": "note"}),
        api.http.post(
            f"/v1/scopes/{sid}/atomic-memory/batch", json={"items": [{"text": MARKERS["body"], "kind": "note"}] * 501}
        ),
        api.prepare(sid, MARKERS["query"] * 500),  # over 8,192 characters
        api.prepare(sid, MARKERS["query"], max_bytes=MARKERS["query"]),
        api.prepare(sid, MARKERS["query"], include_receipt=MARKERS["query"]),
        api.prepare(f"missing-{MARKERS['query']}", MARKERS["query"]),
        api.search(sid, MARKERS["query"], mode="vector"),
        api.search(sid, MARKERS["query"], mode=MARKERS["query"]),
        api.http.post("/v1/scopes", json={"scope_id": MARKERS["query"] + " bad id", "title": MARKERS["body"]}),
        api.http.get(f"/v1/scopes/{MARKERS['query']}"),
        api.http.get(f"/v1/scopes/{sid}/artifacts/atomic-memory/{MARKERS['query']}"),
        api.http.put(
            f"/v1/scopes/{sid}/atomic-memory/{MARKERS['query']}", json={"text": MARKERS["body"], "expected_revision": 1}
        ),
        api.http.post(
            "/v1/context/prepare",
            content=("{" + MARKERS["query"]).encode(),
            headers={"content-type": "application/json"},
        ),
        api.http.post(
            f"/v1/scopes/{sid}/atomic-memory",
            json={"text": "same key", "kind": "note", "idempotency_key": "privacy-key"},
        ),
        api.http.post(
            f"/v1/scopes/{sid}/atomic-memory",
            json={"text": MARKERS["body"], "kind": "note", "idempotency_key": "privacy-key"},
        ),
    ]
    statuses = [r.status_code for r in failing]
    assert statuses[:-2] == [422, 422, 422, 422, 422, 422, 422, 422, 404, 409, 422, 422, 404, 404, 404, 422]
    assert statuses[-2:] == [201, 409]
    for r in failing[:-2] + failing[-1:]:
        errors.append(r.text)
        assert set(r.json()) == {"error"}
        _assert_no_markers(r.text, f"an error body ({r.status_code} {r.json()['error']['code']})")

    log = server.log_text()
    _assert_no_markers(log, "the server log")
    assert sid not in log and b not in log, "the access log names route templates, not Scope ids"
    assert "route=/v1/context/prepare" in log


@pytest.mark.parametrize("where", ["prepare", "memory"])
def test_unknown_field_name_is_not_echoed(api: Api, where: str) -> None:
    """An unknown key is caller input too: the 422 names the problem without repeating it."""
    sid = api.new_scope()
    if where == "prepare":
        r = api.http.post("/v1/context/prepare", json={"scope_id": sid, "query": "q", MARKERS["query"]: 1})
    else:
        r = api.http.post(f"/v1/scopes/{sid}/atomic-memory", json={"text": "t", "kind": "note", MARKERS["body"]: 1})
    assert r.status_code == 422
    _assert_no_markers(r.text, "an unknown-field error body")
