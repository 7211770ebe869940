"""The async client's family methods, and no family content in the server log or in error bodies."""

from __future__ import annotations

import asyncio

import pytest

from powercontext.client import PowerContextClient, PowerContextError
from powercontext.contract.families import ReviseDecision
from tests.conftest import LiveServer
from tests.support import Api, unique


def test_client_covers_every_family_operation(server: LiveServer) -> None:
    async def flow() -> None:
        async with PowerContextClient(server.base_url) as client:
            sid = (await client.create_scope(unique("client"), "client test")).scope_id

            topic = await client.create_topic(sid, "Clientword topic", "first body", ["t"], idempotency_key="k")
            aid = topic.artifact_address.artifact.artifact_id
            assert (await client.create_topic(sid, "Clientword topic", "first body", ["t"], "k")) == topic
            revised = await client.revise_topic(sid, aid, 1, body="second body")
            assert (revised.artifact_address.artifact.revision, revised.title) == (2, "Clientword topic")
            found = await client.search_topics(sid, "clientword")
            assert found.mode == "fts" and [h.artifact_address for h in found.hits] == [revised.artifact_address]
            assert (await client.change_topic_lifecycle(sid, aid, "retire")).state == "retired"
            assert (await client.get_topic(sid, aid, revision=1)).body == "first body"
            assert (await client.change_topic_lifecycle(sid, aid, "restore", expected_revision=2)).state == "active"
            assert (await client.get_topic(sid, aid)).head_revision == 2

            candidate = await client.propose_experience(sid, "Clientword lesson", "worked", "avoid", ["x"])
            cid = candidate.candidate_id
            assert (await client.get_candidate(sid, cid)) == candidate
            decision = ReviseDecision(
                decision="revise",
                expected_candidate_revision=1,
                situation="Clientword lesson, revised",
                what_worked="worked",
                what_to_avoid="avoid",
            )
            assert (await client.review_candidate(sid, cid, decision)).candidate.candidate_revision == 2
            approved = await client.approve_candidate(sid, cid, expected_candidate_revision=2)
            assert approved.experience is not None
            eid = approved.experience.artifact_address.artifact.artifact_id
            hits = await client.search_experiences(sid, "clientword")
            assert hits.mode == "fts" and [h.situation for h in hits.hits] == ["Clientword lesson, revised"]
            other = await client.propose_experience(sid, "Other", "w", "a", target_artifact_id=eid, expected_revision=1)
            rejected = await client.reject_candidate(sid, other.candidate_id, "duplicate")
            assert (rejected.candidate.status, rejected.experience) == ("rejected", None)
            assert (await client.retire_experience(sid, eid, expected_revision=1)).state == "retired"
            assert (await client.get_experience(sid, eid, revision=1)).situation == "Clientword lesson, revised"

            first = await client.set_profile(sid, [("language", "Python"), ("tests", "pytest")])
            assert first.head_revision == 1
            second = await client.set_profile(sid, [("language", "Python 3.11")], expected_revision=1)
            assert (await client.get_profile(sid)) == second
            old = await client.get_profile(sid, revision=1)
            assert (old.artifact_address, old.entries, old.head_revision) == (first.artifact_address, first.entries, 2)
            with pytest.raises(PowerContextError) as stale:
                await client.set_profile(sid, [("k", "v")], expected_revision=1)
            assert (stale.value.status, stale.value.code) == (409, "revision-conflict")

    asyncio.run(flow())


MARKERS = ("OKAPI-FAMILY-3302", "ZEBRA-FAMILY-7781", "麒麟家族标记")


def test_family_content_never_reaches_the_log_or_error_bodies(api: Api, server: LiveServer) -> None:
    sid = api.new_scope()
    body, query, cjk = MARKERS
    base = f"/v1/scopes/{sid}"
    topic = api.http.post(f"{base}/topic-memory", json={"title": f"{body} title", "body": f"{body} {cjk}"}).json()
    aid = topic["artifact_address"]["artifact"]["artifact_id"]
    lesson = {"situation": f"{body} s", "what_worked": f"{cjk} w", "what_to_avoid": f"{body} a"}
    candidate = api.http.post(f"{base}/experience/candidates", json=lesson).json()
    api.http.post(f"{base}/experience/candidates/{candidate['candidate_id']}/review", json={"decision": "approve"})
    api.http.put(f"{base}/profile", json={"entries": [{"key": f"{body} key", "value": f"{cjk} value"}]})
    for path in ("/topic-memory/search", "/experience/search"):
        assert api.http.post(f"{base}{path}", json={"query": f"{query} {body}"}).status_code == 200
    failing = [
        api.http.post(f"{base}/topic-memory", json={"title": f"{body}\n{query}", "body": "b"}),
        api.http.post(f"{base}/topic-memory", json={"title": query, "body": body * 2000}),
        api.http.put(f"{base}/topic-memory/{aid}", json={"expected_revision": 9, "title": query}),
        api.http.post(f"{base}/experience/candidates", json={**lesson, "what_worked": cjk * 2000}),
        api.http.post(f"{base}/experience/candidates", json={**lesson, query: body}),
        api.http.post(f"{base}/experience/candidates/{query}/review", json={"decision": "reject", "reason": query}),
        api.http.put(
            f"{base}/profile", json={"entries": [{"key": query, "value": body}, {"key": query, "value": cjk}]}
        ),
        api.http.get(f"{base}/artifacts/topic-memory/{query}"),
        api.http.get(f"{base}/artifacts/profile/{query}"),
    ]
    for response in failing:
        assert 400 <= response.status_code < 500, response.text
        for marker in MARKERS:
            assert marker.lower() not in response.text.lower()
    log = server.log_text()
    for marker in MARKERS:
        assert marker.lower() not in log.lower()
