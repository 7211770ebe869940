"""Atomic Memory over HTTP against the real server subprocess."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import LiveServer
from tests.support import Api, artifact_id, count_artifacts, error_code, parse_fragments


def mem_path(scope_id: str, suffix: str = "") -> str:
    return f"/v1/scopes/{scope_id}/atomic-memory{suffix}"


def item(text: str, kind: str = "note", **extra: Any) -> dict[str, Any]:
    return {"text": text, "kind": kind, **extra}


def prepared_ids(api: Api, scope_id: str, query: str) -> list[str]:
    r = api.prepare(scope_id, query, max_bytes=32768, include_receipt=True)
    assert r.status_code == 200, r.text
    body = r.json()
    ids = [s["artifact_address"]["artifact"]["artifact_id"] for s in body["receipt"]["selected"]]
    if body["content"] is not None:
        assert ids == [f.address["artifact"]["artifact_id"] for f in parse_fragments(body["content"])]
    return ids


# -- create ------------------------------------------------------------------------------------


def test_create_one(api: Api, server: LiveServer) -> None:
    sid = api.new_scope()
    r = api.http.post(mem_path(sid), json=item("We chose SQLite", "decision", tags=["db", "arch"]))
    assert r.status_code == 201
    m = r.json()
    assert m["artifact_address"]["scope_id"] == sid
    assert m["artifact_address"]["artifact"]["family"] == "atomic-memory"
    assert m["artifact_address"]["artifact"]["revision"] == 1
    assert (m["head_revision"], m["state"], m["kind"], m["text"], m["tags"]) == (
        1,
        "active",
        "decision",
        "We chose SQLite",
        ["db", "arch"],
    )
    assert m["merged_into"] is None and m["merged_from"] == []
    assert m.pop("possibly_supersedes") == []  # only the create answer says what it may replace
    assert api.head(sid, artifact_id(m)).json() == m
    assert api.revision(sid, artifact_id(m), 1).json() == m
    assert count_artifacts(server.db_path, sid) == 1


def test_batch_of_500_in_one_request(api: Api, server: LiveServer) -> None:
    sid = api.new_scope()
    items = [item(f"batchword entry {i}", "fact") for i in range(500)]
    r = api.http.post(mem_path(sid, "/batch"), json={"items": items})
    assert r.status_code == 201, r.text
    created = r.json()["items"]
    assert [m["text"] for m in created] == [i["text"] for i in items]
    assert len({artifact_id(m) for m in created}) == 500
    assert count_artifacts(server.db_path, sid) == 500


def test_batch_of_501_is_rejected_and_writes_nothing(api: Api, server: LiveServer) -> None:
    sid = api.new_scope()
    r = api.http.post(mem_path(sid, "/batch"), json={"items": [item(f"x {i}") for i in range(501)]})
    assert r.status_code == 422 and error_code(r) == "invalid-request"
    assert count_artifacts(server.db_path, sid) == 0


def test_empty_batch_is_rejected(api: Api) -> None:
    sid = api.new_scope()
    r = api.http.post(mem_path(sid, "/batch"), json={"items": []})
    assert r.status_code == 422 and error_code(r) == "invalid-request"


@pytest.mark.parametrize(
    "bad",
    [item("fine text", "opinion"), item(""), item("x" * 8001), {"text": "no kind"}, item("ok", tags=["has space"])],
)
def test_batch_with_one_invalid_item_writes_nothing(api: Api, server: LiveServer, bad: dict[str, Any]) -> None:
    sid = api.new_scope()
    items = [item("valid one"), bad, item("valid two")]
    r = api.http.post(mem_path(sid, "/batch"), json={"items": items})
    assert r.status_code == 422 and error_code(r) == "invalid-request"
    assert count_artifacts(server.db_path, sid) == 0


def test_batch_that_fails_in_the_store_rolls_back(api: Api, server: LiveServer) -> None:
    sid = api.new_scope()
    api.add(sid, "first body", idempotency_key="key-1")
    items = [item("rollbackword one"), item("rollbackword two"), item("another body", idempotency_key="key-1")]
    r = api.http.post(mem_path(sid, "/batch"), json={"items": items})
    assert r.status_code == 409 and error_code(r) == "idempotency-conflict"
    assert count_artifacts(server.db_path, sid) == 1
    assert api.hit_ids(sid, "rollbackword") == []


# -- idempotency -------------------------------------------------------------------------------


def test_idempotency_same_key_same_body_replays(api: Api, server: LiveServer) -> None:
    sid = api.new_scope()
    body = item("idem text", "fact", tags=["t"], idempotency_key="req-42")
    first = api.http.post(mem_path(sid), json=body)
    second = api.http.post(mem_path(sid), json=body)
    assert first.status_code == 201 and second.status_code == 201
    assert artifact_id(first.json()) == artifact_id(second.json())
    assert count_artifacts(server.db_path, sid) == 1


@pytest.mark.parametrize(
    "changed",
    [
        item("other text", "fact", tags=["t"]),
        item("idem text", "note", tags=["t"]),
        item("idem text", "fact", tags=["u"]),
    ],
)
def test_idempotency_same_key_other_body_conflicts(api: Api, server: LiveServer, changed: dict[str, Any]) -> None:
    sid = api.new_scope()
    assert (
        api.http.post(mem_path(sid), json=item("idem text", "fact", tags=["t"], idempotency_key="k")).status_code == 201
    )
    r = api.http.post(mem_path(sid), json={**changed, "idempotency_key": "k"})
    assert r.status_code == 409 and error_code(r) == "idempotency-conflict"
    assert count_artifacts(server.db_path, sid) == 1


def test_idempotency_keys_are_per_scope(api: Api) -> None:
    a, b = api.new_scope(), api.new_scope()
    body = item("same body", idempotency_key="shared-key")
    ma = api.http.post(mem_path(a), json=body).json()
    mb = api.http.post(mem_path(b), json=body).json()
    assert ma["artifact_address"]["scope_id"] == a and mb["artifact_address"]["scope_id"] == b
    assert artifact_id(ma) != artifact_id(mb)


# -- revise ------------------------------------------------------------------------------------


def test_revise_with_expected_revision(api: Api) -> None:
    sid = api.new_scope()
    m = api.add(sid, "oldword original statement", "fact", tags=["keep"])
    aid = artifact_id(m)
    r = api.http.put(mem_path(sid, f"/{aid}"), json={"text": "newword revised statement", "expected_revision": 1})
    assert r.status_code == 200, r.text
    rev = r.json()
    assert rev["artifact_address"]["artifact"]["revision"] == 2 and rev["head_revision"] == 2
    assert (rev["kind"], rev["tags"]) == ("fact", ["keep"])  # omitted kind and tags are kept
    stale = api.http.put(mem_path(sid, f"/{aid}"), json={"text": "lost update", "expected_revision": 1})
    assert stale.status_code == 409 and error_code(stale) == "revision-conflict"
    head = api.head(sid, aid).json()
    assert head["text"] == "newword revised statement" and head["head_revision"] == 2
    old = api.revision(sid, aid, 1).json()
    assert (old["text"], old["artifact_address"]["artifact"]["revision"], old["head_revision"]) == (
        "oldword original statement",
        1,
        2,
    )
    assert api.revision(sid, aid, 3).status_code == 404
    assert error_code(api.revision(sid, aid, 3)) == "revision-not-found"
    # Only the active head is searchable; the superseded revision is not.
    assert api.hit_ids(sid, "oldword") == []
    assert api.hit_ids(sid, "newword") == [aid]
    assert prepared_ids(api, sid, "oldword") == []
    changed = api.http.put(
        mem_path(sid, f"/{aid}"), json={"text": "third", "expected_revision": 2, "kind": "state", "tags": []}
    ).json()
    assert (changed["kind"], changed["tags"]) == ("state", [])


def test_revise_unknown_artifact_is_404(api: Api) -> None:
    sid = api.new_scope()
    r = api.http.put(mem_path(sid, "/am_doesnotexist"), json={"text": "x", "expected_revision": 1})
    assert r.status_code == 404 and error_code(r) == "artifact-not-found"


# -- lifecycle ---------------------------------------------------------------------------------


def test_forget_restore_retire(api: Api) -> None:
    sid = api.new_scope()
    m = api.add(sid, "lifeword memory", "fact")
    aid = artifact_id(m)
    f = api.lifecycle(sid, aid, "forget")
    assert f.status_code == 200 and f.json()["state"] == "forgotten"
    assert api.hit_ids(sid, "lifeword") == [] and prepared_ids(api, sid, "lifeword") == []
    again = api.lifecycle(sid, aid, "forget")
    assert again.status_code == 409 and error_code(again) == "artifact-not-active"
    revise = api.http.put(mem_path(sid, f"/{aid}"), json={"text": "nope", "expected_revision": 1})
    assert revise.status_code == 409 and error_code(revise) == "artifact-not-active"
    assert api.lifecycle(sid, aid, "restore").json()["state"] == "active"
    assert api.hit_ids(sid, "lifeword") == [aid] and prepared_ids(api, sid, "lifeword") == [aid]
    stale = api.lifecycle(sid, aid, "retire", expected_revision=2)
    assert stale.status_code == 409 and error_code(stale) == "revision-conflict"
    assert api.lifecycle(sid, aid, "retire", expected_revision=1).json()["state"] == "retired"
    assert api.hit_ids(sid, "lifeword") == [] and prepared_ids(api, sid, "lifeword") == []
    restore = api.lifecycle(sid, aid, "restore")
    assert restore.status_code == 409 and error_code(restore) == "artifact-not-active"
    exact = api.revision(sid, aid, 1).json()
    assert (exact["text"], exact["state"]) == ("lifeword memory", "retired")


def test_unknown_lifecycle_action_is_422(api: Api) -> None:
    sid = api.new_scope()
    aid = artifact_id(api.add(sid, "x"))
    r = api.lifecycle(sid, aid, "delete")
    assert r.status_code == 422 and error_code(r) == "invalid-request"


# -- merge -------------------------------------------------------------------------------------


def test_merge(api: Api) -> None:
    sid = api.new_scope()
    a = api.add(sid, "mergeword alpha source", "fact")
    b = api.add(sid, "mergeword beta source", "fact")
    r = api.http.post(
        mem_path(sid, "/merges"),
        json={
            "sources": [{"artifact_id": artifact_id(a), "revision": 1}, {"artifact_id": artifact_id(b), "revision": 1}],
            "text": "combinedword merged statement",
            "kind": "decision",
            "tags": ["merged"],
        },
    )
    assert r.status_code == 201, r.text
    merged = r.json()
    mid = artifact_id(merged)
    assert mid not in (artifact_id(a), artifact_id(b))
    assert merged["merged_from"] == [a["artifact_address"], b["artifact_address"]]
    assert (merged["state"], merged["kind"], merged["tags"]) == ("active", "decision", ["merged"])
    for src in (a, b):
        head = api.head(sid, artifact_id(src)).json()
        assert (head["state"], head["merged_into"]) == ("merged", mid)
        exact = api.revision(sid, artifact_id(src), 1).json()
        assert exact["artifact_address"] == src["artifact_address"]  # never the merge target
        assert exact["text"] == src["text"]
    assert api.hit_ids(sid, "mergeword") == []
    assert api.hit_ids(sid, "combinedword") == [mid]
    assert prepared_ids(api, sid, "mergeword combinedword") == [mid]
    # Merged sources cannot be merged, revised or restored again.
    again = api.http.post(
        mem_path(sid, "/merges"),
        json={
            "sources": [{"artifact_id": artifact_id(a), "revision": 1}, {"artifact_id": mid, "revision": 1}],
            "text": "again",
            "kind": "fact",
        },
    )
    assert again.status_code == 409 and error_code(again) == "artifact-not-active"
    assert api.lifecycle(sid, artifact_id(a), "restore").status_code == 409


def test_merge_refusals(api: Api) -> None:
    sid = api.new_scope()
    a, b = artifact_id(api.add(sid, "one")), artifact_id(api.add(sid, "two"))

    def merge(sources: list[dict[str, Any]]) -> Any:
        return api.http.post(mem_path(sid, "/merges"), json={"sources": sources, "text": "m", "kind": "fact"})

    stale = merge([{"artifact_id": a, "revision": 1}, {"artifact_id": b, "revision": 2}])
    assert stale.status_code == 409 and error_code(stale) == "revision-conflict"
    single = merge([{"artifact_id": a, "revision": 1}])
    assert single.status_code == 422 and error_code(single) == "invalid-request"
    dup = merge([{"artifact_id": a, "revision": 1}, {"artifact_id": a, "revision": 1}])
    assert dup.status_code == 422
    assert api.head(sid, a).json()["state"] == "active" and api.head(sid, b).json()["state"] == "active"


# -- bodies and kinds --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("a", 201),
        ("x" * 8000, 201),
        ("数" * 2666 + "ab", 201),  # 7,998 + 2 = 8,000 bytes
        ("😀" * 2000, 201),  # 8,000 bytes of 4-byte characters
        ("x" * 8001, 422),
        ("数" * 2667, 422),  # 8,001 bytes but only 2,667 characters
        ("", 422),
        ("   \n\t", 422),
    ],
    ids=["1-byte", "8000-ascii", "8000-cjk", "8000-emoji", "8001-ascii", "8001-cjk", "empty", "blank"],
)
def test_body_byte_limits(api: Api, text: str, status: int) -> None:
    sid = api.new_scope()
    r = api.http.post(mem_path(sid), json=item(text))
    assert r.status_code == status, r.text
    if status == 201:
        assert r.json()["text"] == text
        assert api.revision(sid, artifact_id(r.json()), 1).json()["text"] == text
    else:
        assert error_code(r) == "invalid-request"


def test_revise_and_merge_apply_the_body_limit(api: Api) -> None:
    sid = api.new_scope()
    a, b = artifact_id(api.add(sid, "one")), artifact_id(api.add(sid, "two"))
    r = api.http.put(mem_path(sid, f"/{a}"), json={"text": "数" * 2667, "expected_revision": 1})
    assert r.status_code == 422
    r = api.http.post(
        mem_path(sid, "/merges"),
        json={
            "sources": [{"artifact_id": a, "revision": 1}, {"artifact_id": b, "revision": 1}],
            "text": "x" * 8001,
            "kind": "fact",
        },
    )
    assert r.status_code == 422
    assert api.head(sid, a).json()["head_revision"] == 1


@pytest.mark.parametrize("kind", ["decision", "constraint", "fact", "state", "next-step", "outcome", "note"])
def test_every_kind_in_the_closed_set_is_accepted(api: Api, kind: str) -> None:
    sid = api.new_scope()
    assert api.add(sid, "text", kind)["kind"] == kind


@pytest.mark.parametrize("kind", ["opinion", "Decision", "", "next_step", None, 3])
def test_kind_outside_the_closed_set_is_422(api: Api, server: LiveServer, kind: Any) -> None:
    sid = api.new_scope()
    r = api.http.post(mem_path(sid), json={"text": "text", "kind": kind})
    assert r.status_code == 422 and error_code(r) == "invalid-request"
    assert count_artifacts(server.db_path, sid) == 0


def test_unknown_memory_field_is_422(api: Api) -> None:
    sid = api.new_scope()
    r = api.http.post(mem_path(sid), json={"text": "t", "kind": "note", "artifact_id": "am_chosen"})
    assert r.status_code == 422 and error_code(r) == "invalid-request"


# -- unknown Scope on every scoped endpoint ----------------------------------------------------

MISSING = "missing-scope-for-404"
SCOPED_CALLS = [
    ("POST", f"/v1/scopes/{MISSING}/atomic-memory", item("t")),
    ("POST", f"/v1/scopes/{MISSING}/atomic-memory/batch", {"items": [item("t")]}),
    ("POST", f"/v1/scopes/{MISSING}/atomic-memory/search", {"query": "t"}),
    ("POST", f"/v1/scopes/{MISSING}/atomic-memory/search", {"query": "t", "mode": "vector"}),
    (
        "POST",
        f"/v1/scopes/{MISSING}/atomic-memory/merges",
        {
            "sources": [{"artifact_id": "am_a", "revision": 1}, {"artifact_id": "am_b", "revision": 1}],
            "text": "t",
            "kind": "fact",
        },
    ),
    ("PUT", f"/v1/scopes/{MISSING}/atomic-memory/am_a", {"text": "t", "expected_revision": 1}),
    ("POST", f"/v1/scopes/{MISSING}/atomic-memory/am_a/lifecycle", {"action": "forget"}),
    ("GET", f"/v1/scopes/{MISSING}/artifacts/atomic-memory/am_a", None),
    ("GET", f"/v1/scopes/{MISSING}/artifacts/atomic-memory/am_a/revisions/1", None),
    ("GET", f"/v1/scopes/{MISSING}", None),
    ("PUT", f"/v1/scopes/{MISSING}", {"title": "t"}),
    ("POST", "/v1/context/prepare", {"scope_id": MISSING, "query": "t"}),
    ("POST", "/v1/context/prepare", {"scope_id": MISSING, "query": "t", "include_receipt": True}),
]


@pytest.mark.parametrize(("method", "path", "body"), SCOPED_CALLS, ids=[f"{m} {p}" for m, p, _ in SCOPED_CALLS])
def test_unknown_scope_is_404_everywhere(api: Api, method: str, path: str, body: Any) -> None:
    r = api.http.request(method, path, json=body)
    assert r.status_code == 404, r.text
    assert error_code(r) == "scope-not-found"


def test_scope_reference_to_unknown_scope_is_404(api: Api) -> None:
    r = api.http.post("/v1/scopes", json={"scope_id": "refs-missing-x", "title": "t", "context_references": [MISSING]})
    assert r.status_code == 404 and error_code(r) == "referenced-scope-not-found"
    assert api.http.get("/v1/scopes/refs-missing-x").status_code == 404


def test_scope_create_conflict_and_update(api: Api) -> None:
    sid = api.new_scope()
    r = api.http.post("/v1/scopes", json={"scope_id": sid, "title": "again"})
    assert r.status_code == 409 and error_code(r) == "scope-exists"
    other = api.new_scope()
    upd = api.http.put(f"/v1/scopes/{sid}", json={"title": "new title", "context_references": [other]})
    assert upd.status_code == 200
    got = api.http.get(f"/v1/scopes/{sid}").json()
    assert (got["title"], got["context_references"]) == ("new title", [other])
    assert sid in [s["scope_id"] for s in api.http.get("/v1/scopes").json()["items"]]
    self_ref = api.http.put(f"/v1/scopes/{sid}", json={"title": "t", "context_references": [sid]})
    assert self_ref.status_code == 422


# -- search modes and full text ----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["vector", "hybrid"])
def test_vector_and_hybrid_are_unavailable(api: Api, mode: str) -> None:
    sid = api.new_scope()
    r = api.search(sid, "anything", mode=mode)
    assert r.status_code == 409 and error_code(r) == "mode-unavailable"


@pytest.mark.parametrize("mode", ["auto", "fts", None])
def test_auto_and_fts_run_fts(api: Api, mode: str | None) -> None:
    sid = api.new_scope()
    aid = artifact_id(api.add(sid, "modeword here"))
    r = api.search(sid, "modeword", **({"mode": mode} if mode else {}))
    assert r.status_code == 200
    body = r.json()
    assert (body["mode"], body["fallback_reason"]) == ("fts", "none")
    assert [artifact_id(h) for h in body["hits"]] == [aid]


def test_search_limit_bounds(api: Api) -> None:
    sid = api.new_scope()
    for i in range(5):
        api.add(sid, f"limitword {i}")
    assert len(api.search(sid, "limitword", limit=3).json()["hits"]) == 3
    assert api.search(sid, "limitword", limit=0).status_code == 422
    assert api.search(sid, "limitword", limit=51).status_code == 422


def test_deployment_finds_deploy(api: Api) -> None:
    sid = api.new_scope()
    aid = artifact_id(api.add(sid, "We deploy the payments service on Tuesdays", "decision"))
    api.add(sid, "Lunch is at noon", "note")
    assert api.hit_ids(sid, "deployment") == [aid]
    assert api.hit_ids(sid, "Deployments") == [aid]
    assert prepared_ids(api, sid, "deployment schedule") == [aid]


def test_two_character_chinese_word_finds_unsegmented_sentence(api: Api) -> None:
    sid = api.new_scope()
    aid = artifact_id(api.add(sid, "我们决定在周末把所有数据迁移到新的存储集群", "decision"))
    api.add(sid, "午饭在十二点", "note")
    assert api.hit_ids(sid, "数据") == [aid]
    assert prepared_ids(api, sid, "数据") == [aid]
    hits = api.search(sid, "数据").json()["hits"]
    assert hits[0]["text"] == "我们决定在周末把所有数据迁移到新的存储集群"


def test_search_stays_inside_its_scope(api: Api) -> None:
    a, b = api.new_scope(), api.new_scope()
    in_a = artifact_id(api.add(a, "scopeword in a"))
    api.add(b, "scopeword in b")
    assert api.hit_ids(a, "scopeword") == [in_a]


def test_forgetting_one_memory_keeps_others_with_the_same_words_searchable(api: Api) -> None:
    sid = api.new_scope()
    gone = artifact_id(api.add(sid, "sharedword rollout plan friday"))
    kept = artifact_id(api.add(sid, "sharedword rollout plan monday"))
    assert sorted(api.hit_ids(sid, "sharedword")) == sorted([gone, kept])
    assert api.lifecycle(sid, gone, "forget").status_code == 200
    assert api.hit_ids(sid, "sharedword") == [kept]
    assert prepared_ids(api, sid, "rollout plan") == [kept]


def test_control_characters_and_quotes_round_trip_exactly(api: Api) -> None:
    sid = api.new_scope()
    text = 'controlword "quoted" back\\slash NUL\x00 tab\t bell\x07 line\u2028sep END_POWERCONTEXT_PREPARED_CONTEXT_V1'
    aid = artifact_id(api.add(sid, text))
    assert api.revision(sid, aid, 1).json()["text"] == text
    r = api.prepare(sid, "controlword", include_receipt=True)
    (fragment,) = parse_fragments(r.json()["content"])
    assert fragment.item["content"] == text
    assert r.json()["receipt"]["selected"][0]["rendered_bytes"] == fragment.size


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        ("/atomic-memory", '{"text": "bad \\ud800 surrogate", "kind": "note"}'),
        ("/atomic-memory/search", '{"query": "\\udfff lone"}'),
    ],
)
def test_lone_surrogates_are_invalid_requests_not_server_errors(api: Api, path: str, raw: str) -> None:
    sid = api.new_scope()
    r = api.http.post(f"/v1/scopes/{sid}{path}", content=raw.encode(), headers={"content-type": "application/json"})
    assert r.status_code == 422 and error_code(r) == "invalid-request"
    p = api.http.post(
        "/v1/context/prepare",
        content=('{"scope_id": "' + sid + '", "query": "\\ud800 q", "include_receipt": true}').encode(),
        headers={"content-type": "application/json"},
    )
    assert p.status_code == 422 and error_code(p) == "invalid-request"


def test_hostile_transport_input_is_a_4xx_with_the_envelope(api: Api) -> None:
    sid = api.new_scope()
    memory = api.add(sid, "overflow probe", "fact")
    huge = api.revision(sid, artifact_id(memory), 2**70)
    assert huge.status_code == 422 and error_code(huge) == "invalid-request"
    stale = api.http.put(
        f"/v1/scopes/{sid}/atomic-memory/{artifact_id(memory)}", json={"text": "x", "expected_revision": 2**70}
    )
    assert stale.status_code == 422 and error_code(stale) == "invalid-request"
    not_utf8 = api.http.post("/v1/context/prepare", content=b"\xff\xfe{", headers={"content-type": "application/json"})
    assert not_utf8.status_code == 422 and error_code(not_utf8) == "invalid-request"
    wrong_method = api.http.delete("/v1/scopes")
    assert wrong_method.status_code == 405 and error_code(wrong_method) == "method-not-allowed"
    assert wrong_method.headers["allow"] == "GET, POST"
    batch_path = api.http.delete(f"/v1/scopes/{sid}/atomic-memory/batch")
    assert batch_path.status_code == 405 and batch_path.headers["allow"] == "POST"
