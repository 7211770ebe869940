"""Vector and hybrid recall against a real OpenAI-compatible embedding server on loopback.

The embedding server (``tests/embedding_server.py``) is a separate process whose answers the tests
steer: answer, 500, garbage, wrong dimension, or a stall past the Server's timeout. Every case
must give the right search mode and Receipt group while prepare still answers.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import forked
from tests.code_support import make_git_repo
from tests.conftest import REPO_ROOT, LiveServer, code_roots_for_tests, live_server
from tests.embedding_fixture import EmbeddingServer, start_embedding_server
from tests.support import Api, code_vectors, code_vectors_filled, free_port, unique, wait_until

DIM = 64
TIMEOUT_S = 0.5
MEMORY_ONLY = {"sections": [{"family": "memory", "limit": 8}]}


def provider_settings(base_url: str, model: str = "fake-embed") -> dict[str, str]:
    return {
        "POWERCONTEXT_EMBEDDINGS": "openai-compatible",
        "POWERCONTEXT_EMBEDDINGS_BASE_URL": base_url,
        "POWERCONTEXT_EMBEDDINGS_MODEL": model,
        "POWERCONTEXT_EMBEDDINGS_DIMENSION": str(DIM),
        "POWERCONTEXT_EMBEDDINGS_TIMEOUT": str(TIMEOUT_S),
        # Each case below must see the provider's answer, not the breaker's memory of the last one.
        "POWERCONTEXT_EMBEDDINGS_COOLDOWN": "0",
    }


@pytest.fixture(scope="module")
def embeddings() -> Iterator[EmbeddingServer]:
    with start_embedding_server(DIM) as server:
        yield server


@pytest.fixture(scope="module")
def vector_server(tmp_path_factory: pytest.TempPathFactory, embeddings: EmbeddingServer) -> Iterator[LiveServer]:
    settings = provider_settings(embeddings.base_url) | code_roots_for_tests(tmp_path_factory)
    with live_server(tmp_path_factory.mktemp("vector"), settings) as live:
        yield live


@pytest.fixture
def vapi(vector_server: LiveServer, embeddings: EmbeddingServer) -> Iterator[Api]:
    embeddings.control(mode="answer")
    client = Api(vector_server.base_url)
    try:
        yield client
    finally:
        embeddings.control(mode="answer")
        client.close()


def prepare_receipt(api: Api, scope_id: str, query: str, **extra: Any) -> dict[str, Any]:
    r = api.post("/v1/context/prepare", {"scope_id": scope_id, "query": query, "include_receipt": True, **extra})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    assert "receipt" in body, "the Receipt was dropped"
    return body


def atomic_groups(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [g for g in body["receipt"]["retrieval"]["searches"] if g["family"] == "atomic-memory"]


def group(mode: str, fallback: str, count: int = 1, outcome: str = "completed") -> dict[str, Any]:
    return {
        "round": 0,
        "family": "atomic-memory",
        "mode": mode,
        "outcome": outcome,
        "fallback_reason": fallback,
        "count": count,
    }


def seed(api: Api, texts: list[str]) -> str:
    scope_id = api.new_scope()
    r = api.post(f"/v1/scopes/{scope_id}/atomic-memory/batch", {"items": [{"text": t, "kind": "fact"} for t in texts]})
    assert r.status_code == 201, r.text
    return scope_id


TEXTS = [
    "the payments ledger settles nightly in UTC",
    "release trains leave every tuesday afternoon",
    "the blue green switch flips traffic between pools",
]


def test_capabilities_list_the_modes_that_work_now(tmp_path: Path, embeddings: EmbeddingServer) -> None:
    settings = {**provider_settings(embeddings.base_url), "POWERCONTEXT_EMBEDDINGS_COOLDOWN": "30"}
    with live_server(tmp_path, settings) as live:
        client = Api(live.base_url)
        try:
            capabilities = client.get("/v1/capabilities").json()
            assert set(capabilities["search_modes"]) == {"auto", "fts", "vector", "hybrid"}
            assert capabilities["embedding_model"] == f"openai-compatible:fake-embed:{DIM}"
            embeddings.control(mode="error")
            sid = seed(client, TEXTS)  # the write's embedding fails: the breaker opens
            assert set(client.get("/v1/capabilities").json()["search_modes"]) == {"auto", "fts"}
            body = prepare_receipt(client, sid, "payments ledger", assembly=MEMORY_ONLY)
            assert atomic_groups(body) == [group("fts", "inference_unavailable")]
        finally:
            embeddings.control(mode="answer")
            client.close()


def test_explicit_vector_search_finds_by_embedding(vapi: Api) -> None:
    sid = seed(vapi, TEXTS)
    r = vapi.post(f"/v1/scopes/{sid}/atomic-memory/search", {"query": "ledger settles", "mode": "vector", "limit": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["mode"], body["fallback_reason"]) == ("vector", "none")
    assert body["hits"][0]["text"] == TEXTS[0]
    assert len(body["hits"]) == 3  # vector search ranks every embedded head, sharing words or not


def test_auto_prepare_runs_hybrid(vapi: Api) -> None:
    sid = seed(vapi, TEXTS)
    body = prepare_receipt(vapi, sid, "when do release trains leave", assembly=MEMORY_ONLY)
    assert body["status"] == "ready"
    assert atomic_groups(body) == [group("hybrid", "none")]
    assert body["receipt"]["retrieval"]["searches"] == [group("hybrid", "none")]


@pytest.mark.parametrize(
    ("control", "reason"),
    [
        ({"mode": "error"}, "inference_unavailable"),
        ({"mode": "garbage"}, "inference_unavailable"),
        ({"mode": "wrong_dim"}, "inference_unavailable"),
        ({"mode": "stall", "stall_s": 3 * TIMEOUT_S}, "inference_timeout"),
    ],
)
def test_provider_failure_falls_back_to_fts(
    vapi: Api, embeddings: EmbeddingServer, control: dict[str, Any], reason: str
) -> None:
    sid = seed(vapi, TEXTS)
    embeddings.control(**control)
    body = prepare_receipt(vapi, sid, "payments ledger", assembly=MEMORY_ONLY)
    assert body["status"] == "ready"  # fts still found it
    assert atomic_groups(body) == [group("fts", reason)]
    content = body["content"]
    assert TEXTS[0] in content


@pytest.mark.parametrize(
    ("mode", "status", "code"), [("error", 503, "inference-unavailable"), ("stall", 504, "inference-timeout")]
)
def test_explicit_vector_search_reports_provider_failure(
    vapi: Api, embeddings: EmbeddingServer, mode: str, status: int, code: str
) -> None:
    sid = seed(vapi, TEXTS)
    embeddings.control(mode=mode, stall_s=3 * TIMEOUT_S)
    for search_mode in ("vector", "hybrid"):
        r = vapi.post(f"/v1/scopes/{sid}/atomic-memory/search", {"query": "ledger", "mode": search_mode})
        assert r.status_code == status, r.text
        assert r.json()["error"]["code"] == code


def test_auto_search_endpoint_reports_its_fallback(vapi: Api, embeddings: EmbeddingServer) -> None:
    sid = seed(vapi, TEXTS)
    embeddings.control(mode="error")
    body = vapi.post(f"/v1/scopes/{sid}/atomic-memory/search", {"query": "ledger"}).json()
    assert (body["mode"], body["fallback_reason"]) == ("fts", "inference_unavailable")
    assert body["hits"][0]["text"] == TEXTS[0]


def test_rfc_example_hybrid_and_timeout_in_two_scopes(vapi: Api, embeddings: EmbeddingServer) -> None:
    referenced = seed(vapi, ["the ledger export runs at midnight"])
    request_scope = unique("rfc")
    r = vapi.post("/v1/scopes", {"scope_id": request_scope, "title": "t", "context_references": [referenced]})
    assert r.status_code == 201, r.text
    vapi.post(f"/v1/scopes/{request_scope}/atomic-memory", {"text": "the ledger is append only", "kind": "fact"})
    # The request Scope is searched first: its embedding answers, the referenced Scope's stalls.
    embeddings.control(mode="answer", script=["answer", "stall"], stall_s=3 * TIMEOUT_S)
    body = prepare_receipt(vapi, request_scope, "ledger", assembly=MEMORY_ONLY)
    assert body["receipt"]["retrieval"]["searches"] == [group("hybrid", "none"), group("fts", "inference_timeout")]
    cited = {s["artifact_address"]["scope_id"] for s in body["receipt"]["selected"]}
    assert cited == {request_scope, referenced}


def test_include_receipt_makes_no_extra_embedding_calls(vapi: Api, embeddings: EmbeddingServer) -> None:
    sid = seed(vapi, TEXTS)
    request = {"scope_id": sid, "query": "payments ledger"}
    counts = []
    for flag in (False, True):
        before = embeddings.stats()["requests"]
        assert vapi.post("/v1/context/prepare", {**request, "include_receipt": flag}).status_code == 200
        counts.append(embeddings.stats()["requests"] - before)
    assert counts[0] == counts[1] >= 1


def test_zero_hit_search_differs_from_not_run(vapi: Api) -> None:
    sid = vapi.new_scope()  # no memories, no Profile
    assembly = {"sections": [{"family": "memory", "limit": 8}, {"family": "profile", "limit": 1}]}
    body = prepare_receipt(vapi, sid, "anything at all", assembly=assembly)
    assert body["status"] == "empty"
    searches = body["receipt"]["retrieval"]["searches"]
    assert group("hybrid", "none") in searches  # it ran, found nothing
    profile = [g for g in searches if g["family"] == "profile"]
    assert profile == [
        {"round": 0, "family": "profile", "mode": "none", "outcome": "not_run", "fallback_reason": "none", "count": 1}
    ]
    omitted = {(o["family"], o["reason"]): o["count"] for o in body["receipt"]["omitted"]}
    assert omitted == {("atomic-memory", "not_retrieved"): 1, ("profile", "not_retrieved"): 1}


def test_refused_connection_is_inference_unavailable(tmp_path: Path) -> None:
    closed = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    with live_server(tmp_path, provider_settings(closed)) as live:
        client = Api(live.base_url)
        try:
            sid = seed(client, TEXTS)  # writes still succeed, without vectors
            body = prepare_receipt(client, sid, "payments ledger", assembly=MEMORY_ONLY)
            assert atomic_groups(body) == [group("fts", "inference_unavailable")]
            assert TEXTS[0] in body["content"]
        finally:
            client.close()


def _backfill(live: LiveServer) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(live.base_url + "/health/ready", timeout=5).json()
    return dict(body["embeddings"])


def test_reindex_embeds_old_memories_and_detects_a_model_change(tmp_path: Path, embeddings: EmbeddingServer) -> None:
    embeddings.control(mode="answer")
    with live_server(tmp_path, log_name="plain.log") as live:  # no provider: fts only
        client = Api(live.base_url)
        sid = seed(client, TEXTS)
        client.close()

    def run_reindex(model: str) -> subprocess.CompletedProcess[str]:
        env = {**provider_settings(embeddings.base_url, model), "PATH": "/usr/bin:/bin"}
        return forked.run(
            [sys.executable, "-m", "powercontext", "memory", "reindex", "--db", str(tmp_path / "powercontext.db")],
            capture_output=True,
            text=True,
            cwd=REPO_ROOT,
            env=env,
            timeout=120,
        )

    done = run_reindex("fake-embed")
    assert done.returncode == 0, done.stderr
    assert "embedded 3 memories" in done.stdout
    assert "embedded 0 memories" in run_reindex("fake-embed").stdout
    vector = {"query": "ledger settles", "mode": "vector"}

    with live_server(tmp_path, provider_settings(embeddings.base_url), log_name="before.log") as live:
        assert "event=embeddings.index.incomplete" not in live.log_text()
        assert _backfill(live)["total"] == 0  # nothing left for the Server to embed
        client = Api(live.base_url)
        hits = client.post(f"/v1/scopes/{sid}/atomic-memory/search", vector).json()["hits"]
        assert hits[0]["text"] == TEXTS[0]
        client.close()

    with live_server(tmp_path, provider_settings(embeddings.base_url, "other-model"), log_name="changed.log") as live:
        log = live.log_text()
        assert "event=embeddings.index.incomplete" in log and "other_model=3" in log
        # The Server embeds them with the new model by itself, in the background.
        assert wait_until(lambda: _backfill(live)["state"] == "done", timeout=30), _backfill(live)
        assert _backfill(live) | {"model": ""} == {
            "state": "done",
            "model": "",
            "embedded": 3,
            "total": 3,
            "scopes_incomplete": 0,
            "provider_failures": 0,
            "last_failure": None,
        }
        log = live.log_text()
        assert "event=embeddings.backfill.start" in log and "missing=3" in log
        assert "event=embeddings.backfill.done embedded=3 total=3" in log
        client = Api(live.base_url)
        hits = client.post(f"/v1/scopes/{sid}/atomic-memory/search", vector).json()["hits"]
        assert hits[0]["text"] == TEXTS[0]  # compared with the new model's vectors only
        client.close()


def test_prepare_searches_full_text_until_the_start_up_backfill_has_embedded_a_scope(
    tmp_path: Path, embeddings: EmbeddingServer
) -> None:
    with live_server(tmp_path, log_name="plain.log") as live:  # written with no provider: no vectors
        client = Api(live.base_url)
        old = seed(client, TEXTS)
        client.close()
    embeddings.control(mode="error")  # the backfill's provider calls fail until the provider recovers
    try:
        with live_server(tmp_path, provider_settings(embeddings.base_url), log_name="backfill.log") as live:
            client = Api(live.base_url)
            assert wait_until(lambda: _backfill(live)["provider_failures"] >= 1, timeout=30)
            progress = _backfill(live)
            assert (progress["state"], progress["embedded"], progress["total"]) == ("embedding", 0, 3)
            assert progress["scopes_incomplete"] == 1 and progress["last_failure"] == "inference_unavailable"
            assert "event=embeddings.backfill.paused reason=inference_unavailable" in live.log_text()
            # The Scope whose vectors are incomplete is searched in full text, by choice (fallback none).
            body = prepare_receipt(client, old, "payments ledger", assembly=MEMORY_ONLY)
            assert atomic_groups(body) == [group("fts", "none")]
            assert TEXTS[0] in body["content"]
            embeddings.control(mode="answer")
            # A new Scope has nothing to backfill: hybrid at once, while the old one is still waiting.
            new = seed(client, TEXTS)
            body = prepare_receipt(client, new, "payments ledger", assembly=MEMORY_ONLY)
            assert atomic_groups(body) == [group("hybrid", "none")]
            assert wait_until(lambda: _backfill(live)["state"] == "done", timeout=30), _backfill(live)
            assert _backfill(live)["embedded"] == 3 and _backfill(live)["scopes_incomplete"] == 0
            body = prepare_receipt(client, old, "payments ledger", assembly=MEMORY_ONLY)
            assert atomic_groups(body) == [group("hybrid", "none")]
            client.close()
    finally:
        embeddings.control(mode="answer")


def test_offline_local_model_finds_a_memory_that_shares_no_words(tmp_path: Path) -> None:
    """With the ``embeddings`` extra: no provider process, no network, only the bundled model."""
    settings = {"POWERCONTEXT_EMBEDDINGS": "local", "POWERCONTEXT_EMBEDDINGS_COOLDOWN": "0"}
    with live_server(tmp_path, settings) as live:
        client = Api(live.base_url)
        try:
            sid = seed(
                client,
                [
                    "Releases go out through the blue/green deploy pipeline",
                    "The office coffee machine is descaled on Fridays",
                    "Invoices are numbered per legal entity",
                    "Our style guide prefers British spelling",
                ],
            )
            query = "how do we ship to production"
            fts = client.post(f"/v1/scopes/{sid}/atomic-memory/search", {"query": query, "mode": "fts"}).json()
            assert fts["hits"] == []  # no shared words: full text cannot find it
            hits = client.post(f"/v1/scopes/{sid}/atomic-memory/search", {"query": query, "mode": "vector"}).json()
            assert hits["hits"][0]["text"].startswith("Releases go out")
            body = prepare_receipt(client, sid, query, assembly=MEMORY_ONLY)
            assert atomic_groups(body) == [group("hybrid", "none")]
            first = body["receipt"]["selected"][0]["artifact_address"]["artifact"]["artifact_id"]
            assert first == hits["hits"][0]["artifact_address"]["artifact"]["artifact_id"]
        finally:
            client.close()


def test_topic_memory_runs_hybrid_and_falls_back_like_atomic_memory(vapi: Api, embeddings: EmbeddingServer) -> None:
    sid = vapi.new_scope()
    for title, body in [("Settlement", "the payments ledger settles nightly"), ("Releases", "trains leave tuesdays")]:
        assert vapi.post(f"/v1/scopes/{sid}/topic-memory", {"title": title, "body": body}).status_code == 201
    search = vapi.post(f"/v1/scopes/{sid}/topic-memory/search", {"query": "ledger settles", "mode": "vector"}).json()
    assert search["mode"] == "vector" and search["hits"][0]["title"] == "Settlement"
    topics_only = {"sections": [{"family": "topic-memory", "limit": 2}]}
    body = prepare_receipt(vapi, sid, "ledger settles", assembly=topics_only)
    topic_group = {"round": 0, "family": "topic-memory", "outcome": "completed", "count": 1}
    assert body["receipt"]["retrieval"]["searches"] == [{**topic_group, "mode": "hybrid", "fallback_reason": "none"}]
    embeddings.control(mode="error")
    body = prepare_receipt(vapi, sid, "ledger settles", assembly=topics_only)
    assert body["receipt"]["retrieval"]["searches"] == [
        {**topic_group, "mode": "fts", "fallback_reason": "inference_unavailable"}
    ]
    assert body["status"] == "ready"


def test_a_revised_topic_is_found_by_its_new_text_and_a_stale_revise_asks_no_provider(
    vapi: Api, embeddings: EmbeddingServer
) -> None:
    sid = vapi.new_scope()
    for title, body in [("Settlement", "the payments ledger settles nightly"), ("Releases", "trains leave tuesdays")]:
        created = vapi.post(f"/v1/scopes/{sid}/topic-memory", {"title": title, "body": body})
        assert created.status_code == 201
    aid = created.json()["artifact_address"]["artifact"]["artifact_id"]
    revised = vapi.put(f"/v1/scopes/{sid}/topic-memory/{aid}", {"expected_revision": 1, "body": "vault rotates keys"})
    assert revised.status_code == 200 and revised.json()["title"] == "Releases"
    search = vapi.post(f"/v1/scopes/{sid}/topic-memory/search", {"query": "vault rotates keys", "mode": "vector"})
    top = search.json()["hits"][0]
    ref = top["artifact_address"]["artifact"]
    assert (ref["artifact_id"], ref["revision"], top["title"]) == (aid, 2, "Releases")
    before = embeddings.stats()["requests"]
    stale = vapi.put(f"/v1/scopes/{sid}/topic-memory/{aid}", {"expected_revision": 1, "title": "late"})
    assert stale.status_code == 409
    assert embeddings.stats()["requests"] == before  # the compare-and-swap would refuse it: nothing to embed


def _code_vectors(api: Api) -> dict[str, Any]:
    detail = code_vectors(api)
    assert detail is not None, "a Server with a provider runs the code-vector fill"
    return detail


def test_code_is_embedded_after_index_and_queried_by_both_channels(
    vapi: Api, embeddings: EmbeddingServer, tmp_path: Path
) -> None:
    repo = make_git_repo(tmp_path / "repo")
    sid = vapi.new_scope()
    before, embedded = embeddings.stats()["inputs"], _code_vectors(vapi)["embedded"]
    report = vapi.post(f"/v1/scopes/{sid}/code/index", {"path": str(repo)}).json()
    # The Server embeds the new chunks after answering: one vector per new chunk.
    assert wait_until(lambda: code_vectors_filled(vapi), timeout=30), _code_vectors(vapi)
    assert _code_vectors(vapi)["embedded"] - embedded == report["chunks"]
    assert embeddings.stats()["inputs"] - before == report["chunks"]
    before = embeddings.stats()["requests"]
    hits = vapi.post(f"/v1/scopes/{sid}/code/query", {"query": "retry policy delay"}).json()["hits"]
    assert hits and embeddings.stats()["requests"] - before == 1
    code_only = {"include_code": True, "assembly": {"sections": []}}
    body = prepare_receipt(vapi, sid, "retry policy delay", **code_only)
    code_group = {"round": 0, "family": "code", "mode": "code", "outcome": "completed", "count": 1}
    assert body["receipt"]["retrieval"]["searches"] == [{**code_group, "fallback_reason": "none"}]
    embeddings.control(mode="stall", stall_s=3 * TIMEOUT_S)
    body = prepare_receipt(vapi, sid, "retry policy delay", **code_only)
    assert body["receipt"]["retrieval"]["searches"] == [{**code_group, "fallback_reason": "inference_timeout"}]
    assert body["status"] == "ready"  # full text still found the code


def test_code_waits_for_its_vectors_on_full_text_and_gets_them_once_the_provider_answers(
    vapi: Api, embeddings: EmbeddingServer, tmp_path: Path
) -> None:
    repo = make_git_repo(tmp_path / "repo")
    sid = vapi.new_scope()
    before = _code_vectors(vapi)
    embeddings.control(mode="stall", stall_s=3 * TIMEOUT_S)
    report = vapi.post(f"/v1/scopes/{sid}/code/index", {"path": str(repo)})
    assert report.status_code == 200, report.text
    chunks = report.json()["chunks"]
    assert wait_until(lambda: _code_vectors(vapi)["provider_failures"] > before["provider_failures"], timeout=30)
    assert _code_vectors(vapi)["embedded"] == before["embedded"]
    assert _code_vectors(vapi)["left"] >= chunks  # what the fill has yet to embed, its total to come
    code_only = {"include_code": True, "assembly": {"sections": []}}
    group = {"round": 0, "family": "code", "mode": "code", "outcome": "completed", "count": 1}
    # Found by full text alone, without asking the stalled provider for the query's vector (that would time out).
    body = prepare_receipt(vapi, sid, "retry policy delay", **code_only)
    assert body["receipt"]["retrieval"]["searches"] == [{**group, "fallback_reason": "none"}]
    embeddings.control(mode="answer")

    assert wait_until(lambda: code_vectors_filled(vapi), timeout=30), _code_vectors(vapi)
    assert _code_vectors(vapi)["embedded"] - before["embedded"] == chunks
    assert _code_vectors(vapi)["left"] == 0
    # Now the query's vector is asked for: a stall costs the vector channel, and full text answers alone.
    embeddings.control(mode="stall", stall_s=3 * TIMEOUT_S)
    body = prepare_receipt(vapi, sid, "retry policy delay", **code_only)
    assert body["receipt"]["retrieval"]["searches"] == [{**group, "fallback_reason": "inference_timeout"}]
