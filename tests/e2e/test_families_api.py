"""Topic Memory, Experience and Profile over HTTP against the real server subprocess."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest

from tests.conftest import LiveServer
from tests.support import Api, artifact_id, error_code


def sp(scope_id: str, suffix: str) -> str:
    return f"/v1/scopes/{scope_id}{suffix}"


def ok(response: httpx.Response, status: int = 200) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    return body


def refused(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert error_code(response) == code


def new_topic(api: Api, sid: str, title: str = "Deploy pipeline", body: str = "Blue-green.", **extra: Any) -> Any:
    return ok(api.http.post(sp(sid, "/topic-memory"), json={"title": title, "body": body, **extra}), 201)


def topic_search(api: Api, sid: str, query: str, **extra: Any) -> list[str]:
    result = ok(api.http.post(sp(sid, "/topic-memory/search"), json={"query": query, **extra}))
    assert result["mode"] == "fts"
    return [artifact_id(h) for h in result["hits"]]


def lesson(situation: str = "Flaky tests", **extra: Any) -> dict[str, Any]:
    return {"situation": situation, "what_worked": "Pin the seed", "what_to_avoid": "Sleeping", **extra}


def propose(api: Api, sid: str, **fields: Any) -> Any:
    return ok(api.http.post(sp(sid, "/experience/candidates"), json=lesson(**fields)), 201)


def review(api: Api, sid: str, candidate_id: str, **body: Any) -> httpx.Response:
    return api.http.post(sp(sid, f"/experience/candidates/{candidate_id}/review"), json=body)


def approve(api: Api, sid: str, **fields: Any) -> Any:
    candidate = propose(api, sid, **fields)
    return ok(review(api, sid, candidate["candidate_id"], decision="approve"))["experience"]


def exp_search(api: Api, sid: str, query: str) -> list[str]:
    result = ok(api.http.post(sp(sid, "/experience/search"), json={"query": query}))
    assert result["mode"] == "fts"
    return [artifact_id(h) for h in result["hits"]]


def read(api: Api, sid: str, family: str, aid: str, revision: int | None = None) -> httpx.Response:
    path = sp(sid, f"/artifacts/{family}/{aid}")
    return api.http.get(path if revision is None else f"{path}/revisions/{revision}")


# -- topic memory ------------------------------------------------------------------------------


def test_topic_create_read_revise_and_exact_revisions(api: Api) -> None:
    sid = api.new_scope()
    t = new_topic(api, sid, "Release train", "alphaword cadence", tags=["ops"])
    aid = artifact_id(t)
    assert aid.startswith("tm_")
    assert t["artifact_address"] == {
        "scope_id": sid,
        "artifact": {"family": "topic-memory", "artifact_id": aid, "revision": 1},
    }
    assert (t["head_revision"], t["state"], t["title"], t["body"], t["tags"]) == (
        1,
        "active",
        "Release train",
        "alphaword cadence",
        ["ops"],
    )
    assert ok(read(api, sid, "topic-memory", aid)) == t
    assert ok(read(api, sid, "topic-memory", aid, 1)) == t

    r2 = ok(api.http.put(sp(sid, f"/topic-memory/{aid}"), json={"expected_revision": 1, "body": "betaword cadence"}))
    assert (r2["artifact_address"]["artifact"]["revision"], r2["title"], r2["tags"]) == (2, "Release train", ["ops"])
    refused(
        api.http.put(sp(sid, f"/topic-memory/{aid}"), json={"expected_revision": 1, "title": "x"}),
        409,
        "revision-conflict",
    )
    refused(api.http.put(sp(sid, f"/topic-memory/{aid}"), json={"expected_revision": 2}), 422, "invalid-request")
    assert ok(read(api, sid, "topic-memory", aid, 1))["body"] == "alphaword cadence"
    assert ok(read(api, sid, "topic-memory", aid))["head_revision"] == 2
    refused(read(api, sid, "topic-memory", aid, 3), 404, "revision-not-found")
    assert topic_search(api, sid, "alphaword") == []
    assert topic_search(api, sid, "betaword") == [aid]


def test_topic_retire_restore(api: Api) -> None:
    sid = api.new_scope()
    aid = artifact_id(new_topic(api, sid, "Retireword topic", "body"))

    def lifecycle(action: str, **extra: Any) -> httpx.Response:
        return api.http.post(sp(sid, f"/topic-memory/{aid}/lifecycle"), json={"action": action, **extra})

    refused(lifecycle("retire", expected_revision=2), 409, "revision-conflict")
    assert ok(lifecycle("retire", expected_revision=1))["state"] == "retired"
    assert topic_search(api, sid, "retireword") == []
    exact = ok(read(api, sid, "topic-memory", aid, 1))
    assert (exact["state"], exact["title"]) == ("retired", "Retireword topic")
    refused(lifecycle("retire"), 409, "artifact-not-active")
    refused(
        api.http.put(sp(sid, f"/topic-memory/{aid}"), json={"expected_revision": 1, "title": "x"}),
        409,
        "artifact-not-active",
    )
    assert ok(lifecycle("restore"))["state"] == "active"
    assert topic_search(api, sid, "retireword") == [aid]
    refused(lifecycle("forget"), 422, "invalid-request")


def test_topic_idempotency(api: Api) -> None:
    sid = api.new_scope()
    body = {"title": "Idem", "body": "idem body", "idempotency_key": "req-1"}
    first = ok(api.http.post(sp(sid, "/topic-memory"), json=body), 201)
    again = ok(api.http.post(sp(sid, "/topic-memory"), json=body), 201)
    assert artifact_id(first) == artifact_id(again)
    other = api.http.post(sp(sid, "/topic-memory"), json={**body, "body": "another body"})
    refused(other, 409, "idempotency-conflict")
    # The key namespace is the Scope's: an Atomic Memory cannot reuse it.
    memory = api.http.post(
        sp(sid, "/atomic-memory"), json={"text": "idem body", "kind": "note", "idempotency_key": "req-1"}
    )
    refused(memory, 409, "idempotency-conflict")


@pytest.mark.parametrize(
    ("title", "body", "status"),
    [
        ("t" * 200, "x" * 16000, 201),
        ("数" * 200, "数" * 5333 + "a", 201),  # 16,000 bytes
        ("t" * 201, "x", 422),
        ("t", "x" * 16001, 422),
        ("t", "数" * 5334, 422),  # 16,002 bytes in 5,334 characters
        ("", "x", 422),
        ("   ", "x", 422),
        ("two\nlines", "x", 422),
        (" padded", "x", 422),
        ("t", "   \n", 422),
    ],
    ids=[
        "max",
        "max-cjk",
        "title-201",
        "body-16001",
        "body-cjk",
        "empty-title",
        "blank-title",
        "newline",
        "pad",
        "blank",
    ],
)
def test_topic_limits(api: Api, title: str, body: str, status: int) -> None:
    sid = api.new_scope()
    r = api.http.post(sp(sid, "/topic-memory"), json={"title": title, "body": body})
    assert r.status_code == status, r.text
    if status == 422:
        assert error_code(r) == "invalid-request"
        message = r.json()["error"]["message"]
        assert "xxxxx" not in message and "ttttt" not in message and "数数" not in message  # never echoed


def test_topic_search_limits_and_scope(api: Api) -> None:
    sid, other = api.new_scope(), api.new_scope()
    mine = artifact_id(new_topic(api, sid, "Deployment schedule", "We deploy on Tuesdays"))
    new_topic(api, other, "Deployment elsewhere", "deploy")
    assert topic_search(api, sid, "deploying") == [mine]
    for limit in (0, 21):
        r = api.http.post(sp(sid, "/topic-memory/search"), json={"query": "deploy", "limit": limit})
        refused(r, 422, "invalid-request")
    refused(api.http.post(sp(sid, "/topic-memory/search"), json={"query": "  "}), 422, "invalid-request")


def test_topics_and_atomic_memory_never_share_search(api: Api) -> None:
    sid = api.new_scope()
    memory = api.add(sid, "isolationword memory", "fact")
    topic = new_topic(api, sid, "Isolationword topic", "isolationword body")
    assert api.hit_ids(sid, "isolationword") == [artifact_id(memory)]
    assert topic_search(api, sid, "isolationword") == [artifact_id(topic)]
    refused(read(api, sid, "atomic-memory", artifact_id(topic)), 404, "artifact-not-found")
    refused(read(api, sid, "topic-memory", artifact_id(memory)), 404, "artifact-not-found")
    # Atomic Memory's answer shape is unchanged by the shared read route (plus its lineage, issue 40).
    assert set(ok(read(api, sid, "atomic-memory", artifact_id(memory)))) == {
        "artifact_address", "head_revision", "state", "kind", "text", "tags", "created_at", "observed_at",
        "merged_into", "merged_from", "source_refs",
    }  # fmt: skip


def test_concurrent_topic_revisions_get_one_success_and_409s(api: Api, server: LiveServer) -> None:
    sid = api.new_scope()
    aid = artifact_id(new_topic(api, sid))
    statuses: list[int] = []
    barrier = threading.Barrier(6)

    def writer(n: int) -> None:
        with httpx.Client(base_url=server.base_url, timeout=30) as http:
            barrier.wait()
            r = http.put(sp(sid, f"/topic-memory/{aid}"), json={"expected_revision": 1, "body": f"writer {n}"})
            statuses.append(r.status_code)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [200, 409, 409, 409, 409, 409]


# -- experience --------------------------------------------------------------------------------


def test_experience_enters_only_through_review(api: Api) -> None:
    sid = api.new_scope()
    candidate = propose(api, sid, situation="Reviewword situation", tags=["ci"])
    cid = candidate["candidate_id"]
    assert cid.startswith("exc_")
    assert (candidate["status"], candidate["candidate_revision"], candidate["result_address"]) == ("pending", 1, None)
    assert ok(api.http.get(sp(sid, f"/experience/candidates/{cid}"))) == candidate
    assert exp_search(api, sid, "reviewword") == []

    result = ok(review(api, sid, cid, decision="approve", expected_candidate_revision=1))
    experience = result["experience"]
    eid = artifact_id(experience)
    assert eid.startswith("ex_")
    assert result["candidate"]["status"] == "approved"
    assert result["candidate"]["result_address"] == experience["artifact_address"]
    assert (experience["situation"], experience["what_worked"], experience["what_to_avoid"]) == (
        "Reviewword situation",
        "Pin the seed",
        "Sleeping",
    )
    assert (experience["state"], experience["tags"], experience["candidate_id"]) == ("active", ["ci"], cid)
    assert ok(read(api, sid, "experience", eid)) == experience
    assert exp_search(api, sid, "reviewword") == [eid]
    for again in (
        {"decision": "approve"},
        {"decision": "reject"},
        {"decision": "revise", "expected_candidate_revision": 1, **lesson()},
    ):
        refused(review(api, sid, cid, **again), 409, "candidate-not-pending")


def test_candidate_reject_and_revise(api: Api) -> None:
    sid = api.new_scope()
    rejected = propose(api, sid)["candidate_id"]
    out = ok(review(api, sid, rejected, decision="reject", reason="duplicate"))
    assert (out["candidate"]["status"], out["candidate"]["reject_reason"], out["experience"]) == (
        "rejected",
        "duplicate",
        None,
    )
    refused(review(api, sid, "exc_any", decision="reject", reason="Not Kebab"), 422, "invalid-request")

    cid = propose(api, sid, situation="Draftword one")["candidate_id"]
    refused(review(api, sid, cid, decision="revise", **lesson("x")), 422, "invalid-request")  # CAS is required
    stale = review(api, sid, cid, decision="revise", expected_candidate_revision=2, **lesson("x"))
    refused(stale, 409, "candidate-revision-conflict")
    revised = ok(review(api, sid, cid, decision="revise", expected_candidate_revision=1, **lesson("Draftword two")))
    assert (revised["candidate"]["candidate_revision"], revised["candidate"]["status"]) == (2, "pending")
    refused(
        review(api, sid, cid, decision="approve", expected_candidate_revision=1), 409, "candidate-revision-conflict"
    )
    approved = ok(review(api, sid, cid, decision="approve", expected_candidate_revision=2))["experience"]
    assert approved["situation"] == "Draftword two"
    refused(review(api, sid, cid, decision="merge"), 422, "invalid-request")


def test_candidate_revising_an_experience_and_retire(api: Api) -> None:
    sid = api.new_scope()
    first = approve(api, sid, situation="Oldword lesson")
    eid = artifact_id(first)
    refused(
        api.http.post(sp(sid, "/experience/candidates"), json=lesson(target_artifact_id=eid)), 422, "invalid-request"
    )
    refused(
        api.http.post(
            sp(sid, "/experience/candidates"), json=lesson(target_artifact_id="ex_missing", expected_revision=1)
        ),
        404,
        "artifact-not-found",
    )
    second = approve(api, sid, situation="Newword lesson", target_artifact_id=eid, expected_revision=1)
    assert second["artifact_address"]["artifact"] == {"family": "experience", "artifact_id": eid, "revision": 2}
    refused(
        api.http.post(sp(sid, "/experience/candidates"), json=lesson(target_artifact_id=eid, expected_revision=1)),
        409,
        "revision-conflict",
    )
    assert exp_search(api, sid, "oldword") == [] and exp_search(api, sid, "newword") == [eid]
    assert ok(read(api, sid, "experience", eid, 1))["situation"] == "Oldword lesson"

    def lifecycle(action: str, **extra: Any) -> httpx.Response:
        return api.http.post(sp(sid, f"/experience/{eid}/lifecycle"), json={"action": action, **extra})

    refused(lifecycle("retire", expected_revision=1), 409, "revision-conflict")
    assert ok(lifecycle("retire", expected_revision=2))["state"] == "retired"
    assert exp_search(api, sid, "newword") == []
    exact = ok(read(api, sid, "experience", eid, 2))
    assert (exact["state"], exact["situation"]) == ("retired", "Newword lesson")
    refused(lifecycle("retire"), 409, "artifact-not-active")
    refused(lifecycle("restore"), 422, "invalid-request")


@pytest.mark.parametrize("field", ["situation", "what_worked", "what_to_avoid"])
def test_experience_field_limits(api: Api, field: str) -> None:
    sid = api.new_scope()
    ok(api.http.post(sp(sid, "/experience/candidates"), json={**lesson(), field: "x" * 4000}), 201)
    refused(
        api.http.post(sp(sid, "/experience/candidates"), json={**lesson(), field: "x" * 4001}), 422, "invalid-request"
    )
    refused(api.http.post(sp(sid, "/experience/candidates"), json={**lesson(), field: " "}), 422, "invalid-request")


def test_unknown_candidate_is_404(api: Api) -> None:
    sid = api.new_scope()
    refused(api.http.get(sp(sid, "/experience/candidates/exc_missing")), 404, "candidate-not-found")
    refused(review(api, sid, "exc_missing", decision="approve"), 404, "candidate-not-found")


# -- profile -----------------------------------------------------------------------------------


def test_profile_commit_and_read(api: Api) -> None:
    sid = api.new_scope()
    refused(api.http.get(sp(sid, "/profile")), 404, "artifact-not-found")
    refused(read(api, sid, "profile", "profile"), 404, "artifact-not-found")
    entries = [{"key": "language", "value": "Python 3.11"}, {"key": "style", "value": "ruff, mypy --strict"}]
    first = ok(api.http.put(sp(sid, "/profile"), json={"entries": entries}))
    assert first["artifact_address"] == {
        "scope_id": sid,
        "artifact": {"family": "profile", "artifact_id": "profile", "revision": 1},
    }
    assert (first["head_revision"], first["entries"]) == (1, entries)
    assert ok(api.http.get(sp(sid, "/profile"))) == first
    refused(api.http.put(sp(sid, "/profile"), json={"entries": entries}), 409, "revision-conflict")
    refused(
        api.http.put(sp(sid, "/profile"), json={"entries": entries, "expected_revision": 0}), 409, "revision-conflict"
    )
    second = ok(api.http.put(sp(sid, "/profile"), json={"entries": entries[:1], "expected_revision": 1}))
    assert (second["head_revision"], second["entries"]) == (2, entries[:1])
    assert ok(api.http.get(sp(sid, "/profile"))) == second
    assert ok(read(api, sid, "profile", "profile")) == second
    old = ok(read(api, sid, "profile", "profile", 1))
    assert (old["entries"], old["head_revision"]) == (entries, 2)
    refused(read(api, sid, "profile", "profile", 3), 404, "revision-not-found")
    refused(read(api, sid, "profile", "other-id"), 404, "artifact-not-found")


@pytest.mark.parametrize(
    "entries",
    [
        [],
        [{"key": "k", "value": "v"}, {"key": "k", "value": "w"}],
        [{"key": f"k{i}", "value": "v"} for i in range(65)],
        [{"key": "k" * 101, "value": "v"}],
        [{"key": "k", "value": "数" * 667}],  # 2,001 bytes
        [{"key": "two\nlines", "value": "v"}],
        [{"key": "k", "value": " "}],
        [{"key": "k"}],
    ],
    ids=["empty", "duplicate-key", "65-entries", "long-key", "long-value", "newline-key", "blank-value", "no-value"],
)
def test_profile_limits(api: Api, entries: list[dict[str, str]]) -> None:
    sid = api.new_scope()
    refused(api.http.put(sp(sid, "/profile"), json={"entries": entries}), 422, "invalid-request")
    refused(api.http.get(sp(sid, "/profile")), 404, "artifact-not-found")


def test_profile_accepts_its_maximum(api: Api) -> None:
    sid = api.new_scope()
    entries = [{"key": f"{i:03d}" + "k" * 97, "value": "v" * 2000} for i in range(64)]
    assert len(ok(api.http.put(sp(sid, "/profile"), json={"entries": entries}))["entries"]) == 64


# -- every new endpoint on an unknown Scope ----------------------------------------------------

MISSING = "missing-scope-for-404"
CALLS: list[tuple[str, str, Any]] = [
    ("POST", "/topic-memory", {"title": "t", "body": "b"}),
    ("POST", "/topic-memory/search", {"query": "q"}),
    ("PUT", "/topic-memory/tm_a", {"expected_revision": 1, "title": "t"}),
    ("POST", "/topic-memory/tm_a/lifecycle", {"action": "retire"}),
    ("POST", "/experience/candidates", lesson()),
    ("GET", "/experience/candidates/exc_a", None),
    ("POST", "/experience/candidates/exc_a/review", {"decision": "approve"}),
    ("POST", "/experience/search", {"query": "q"}),
    ("POST", "/experience/ex_a/lifecycle", {"action": "retire"}),
    ("PUT", "/profile", {"entries": [{"key": "k", "value": "v"}]}),
    ("GET", "/profile", None),
    ("GET", "/artifacts/topic-memory/tm_a", None),
    ("GET", "/artifacts/experience/ex_a/revisions/1", None),
    ("GET", "/artifacts/profile/profile", None),
    ("GET", "/artifacts/profile/profile/revisions/1", None),
    ("GET", "/artifacts/profile/other", None),
]


@pytest.mark.parametrize(("method", "path", "body"), CALLS, ids=[f"{m} {p}" for m, p, _ in CALLS])
def test_unknown_scope_is_404_on_every_family_endpoint(api: Api, method: str, path: str, body: Any) -> None:
    refused(api.http.request(method, sp(MISSING, path), json=body), 404, "scope-not-found")


def test_unknown_family_is_422(api: Api) -> None:
    sid = api.new_scope()
    refused(read(api, sid, "skill", "sk_a"), 422, "invalid-request")
