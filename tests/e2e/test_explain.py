"""``POST /v1/context/explain`` over HTTP against real Servers: what it reports is the prepare's own run."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import forked
from tests.conftest import LiveServer, live_server
from tests.embedding_fixture import start_embedding_server
from tests.support import Api, artifact_id, error_code, strict_json

ADMIN, VIEWER = "explain-admin-7Hq", "explain-viewer-2Lp"
OWN, SHARED = "explain:own", "explain:shared"


def _identity(item: dict[str, Any]) -> tuple[Any, ...]:
    if item.get("code_evidence"):
        c = item["code_evidence"]
        return ("code", c["path"], c["start_line"])
    a = item["artifact_address"]
    return (a["scope_id"], a["artifact"]["family"], a["artifact"]["artifact_id"], a["artifact"]["revision"])


def _reasons_add_up(explained: dict[str, Any]) -> Counter[tuple[str, str]]:
    """Per-candidate omission reasons, checked against the Receipt's counts (a family with no candidates has none)."""
    per_item = Counter(
        (c["family"], c["fate"]["reason"]) for c in explained["candidates"] if c["fate"]["outcome"] == "omitted"
    )
    counted = Counter({(g["family"], g["reason"]): g["count"] for g in explained["prepared"]["receipt"]["omitted"]})
    for family in [f["family"] for f in explained["families"] if f["candidates"] == 0]:
        del counted[(family, "not_retrieved")]
    assert per_item == counted
    return per_item


def _explain(api: Api, body: dict[str, Any]) -> dict[str, Any]:
    r = api.post("/v1/context/explain", body)
    assert r.status_code == 200, r.text
    return strict_json(r.content)


@pytest.fixture(scope="module")
def crowded(server: LiveServer) -> Iterator[tuple[Api, str, list[str]]]:
    """A Scope with more matching memories than the pool keeps and the Builder injects."""
    api = Api(server.base_url)
    sid = api.new_scope(prefix="explain")
    ids = [artifact_id(api.add(sid, f"release train note {i}: " + "freight " * i, "note")) for i in range(20)]
    api.add(sid, "Nothing in common with the query at all.", "fact")
    topic = {"title": "Release train", "body": "The release train leaves weekly."}
    r = api.post(f"/v1/scopes/{sid}/topic-memory", topic)
    assert r.status_code == 201, r.text
    yield api, sid, ids
    api.close()


def test_selection_is_the_prepares_byte_for_byte(crowded: tuple[Api, str, list[str]]) -> None:
    api, sid, _ = crowded
    body = {"scope_id": sid, "query": "release train", "include_receipt": True, "max_bytes": 1500}
    prepared = strict_json(api.prepare(sid, "release train", include_receipt=True, max_bytes=1500).content)
    explained = _explain(api, body)
    again = explained["prepared"]
    # Same content, byte for byte, and the same selected list (identities, bytes, truncation).
    assert again["content"] == prepared["content"] and again["content_bytes"] == prepared["content_bytes"]
    strip = prepared["receipt"]["selected"]
    assert again["receipt"]["selected"] == strip
    # The candidates it reports as selected are that list, in injection order, with its rendered bytes.
    chosen = sorted((c for c in explained["candidates"] if c["fate"]["outcome"] == "selected"),
                    key=lambda c: c["fate"]["position"])  # fmt: skip
    assert [c["fate"]["position"] for c in chosen] == list(range(1, len(strip) + 1))
    assert [_identity(c) for c in chosen] == [_identity(s) for s in strip]
    assert [c["fate"]["rendered_bytes"] for c in chosen] == [s["rendered_bytes"] for s in strip]
    # Every other candidate carries one of the Receipt's reasons, and they add up to its counts.
    per_item = _reasons_add_up(explained)
    assert per_item[("atomic-memory", "entry_limit")] + per_item[("atomic-memory", "no_fitting_truncation")] > 0
    # The explain data never leaks into prepare's answer.
    assert set(prepared) == {"schema", "status", "content", "content_bytes", "receipt"}


def test_ranks_scores_and_matched_terms_come_from_the_run(crowded: tuple[Api, str, list[str]]) -> None:
    api, sid, _ = crowded
    explained = _explain(api, {"scope_id": sid, "query": "Release trains"})
    assert explained["query_terms"] == ["releas", "train"]
    memories = [c for c in explained["candidates"] if c["family"] == "atomic-memory"]
    families = {f["family"]: f for f in explained["families"]}
    assert len(memories) == families["atomic-memory"]["pool_depth"] == 16, "the pool depth, no deeper"
    assert families["experience"]["candidates"] == 0
    ranks = [c["rank"] for c in memories]
    assert sorted(ranks) == list(range(1, 17))
    by_rank = sorted(memories, key=lambda c: c["rank"])
    scores = [c["bm25"] for c in by_rank]
    assert scores == sorted(scores, reverse=True), "BM25 falls with the fused rank in an fts-only run"
    for c in memories:
        assert c["matched_terms"] == ["releas", "train"]
        assert [r["channel"] for r in c["ranks"]] == ["fts", "fused"]
        assert c["cosine"] is None
    topic = next(c for c in explained["candidates"] if c["family"] == "topic-memory")
    assert topic["matched_terms"] == ["releas", "train"]
    # No text of any item is in the answer.
    raw = json.dumps({k: v for k, v in explained.items() if k != "prepared"})
    assert "freight" not in raw and "weekly" not in raw


def test_expected_ids_say_where_they_landed(crowded: tuple[Api, str, list[str]]) -> None:
    api, sid, ids = crowded
    unrelated = artifact_id(api.add(sid, "Cats sleep most of the day.", "fact"))
    body = {"scope_id": sid, "query": "release train", "expected": [ids[0], ids[19], unrelated, "am_missing"]}
    explained = _explain(api, body)
    landed = {e["artifact_id"]: e for e in explained["expected"]}
    assert landed[ids[0]]["where"] == "candidate"
    assert landed[ids[0]]["fate"]["outcome"] in ("selected", "omitted")
    # The longest note ranks last: below the pool, in the part of the run's own search that only the newer-first
    # rule looks at (twice the pool), so no deeper search is needed to place it.
    deep = landed[ids[19]]
    assert deep["where"] == "below_pool" and deep["pool_depth"] == 16
    assert min(r["rank"] for r in deep["ranks"]) > 16
    assert "not_retrieved" in deep["explanation"]
    assert landed[unrelated]["where"] == "not_found" and landed["am_missing"]["where"] == "not_found"
    marked = [c for c in explained["candidates"] if c["expected"]]
    assert [c["artifact_address"]["artifact"]["artifact_id"] for c in marked] == [ids[0]]


def test_bad_requests_are_refused(crowded: tuple[Api, str, list[str]]) -> None:
    api, sid, _ = crowded
    too_many = {"scope_id": sid, "query": "x", "expected": [f"am_{i}" for i in range(17)]}
    assert api.post("/v1/context/explain", too_many).status_code == 422
    assert api.post("/v1/context/explain", {"scope_id": sid, "query": "x", "expected": [""]}).status_code == 422
    missing = api.post("/v1/context/explain", {"scope_id": "explain:nowhere", "query": "x"})
    assert missing.status_code == 404 and error_code(missing) == "scope-not-found"
    odd_bodies: list[dict[str, Any]] = [
        {"expected": ["%2F..%2F", "a" * 128, "am_\u00e9t\u00e9", "x@1"]},
        {"query": "发布 列车 release\u0000train " * 300, "max_bytes": 512},
        {"assembly": {"sections": [{"family": "experience", "limit": 2}, {"family": "profile", "limit": 8}]}},
        {"include_code": True, "include_receipt": False, "expected": ["x"]},
    ]
    for extra in odd_bodies:
        r = api.post("/v1/context/explain", {"scope_id": sid, "query": "release train", **extra})
        assert r.status_code in (200, 422), r.text
        if r.status_code == 200:
            assert strict_json(r.content)["prepared"]["receipt"]["requested_max_bytes"] >= 512


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def test_items_the_caller_cannot_read_are_not_listed(tmp_path: Path) -> None:
    grants = {
        "principals": [
            {"name": "admin", "token_sha256": _digest(ADMIN), "read": ["*"], "write": ["*"]},
            {"name": "viewer", "token_sha256": _digest(VIEWER), "read": [OWN], "write": []},
        ]
    }
    (tmp_path / "access.json").write_text(json.dumps(grants), encoding="utf-8")
    with live_server(tmp_path, {"POWERCONTEXT_ACCESS_FILE": str(tmp_path / "access.json")}) as live:
        admin = httpx.Client(base_url=live.base_url, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30)
        viewer = httpx.Client(base_url=live.base_url, headers={"Authorization": f"Bearer {VIEWER}"}, timeout=30)
        assert admin.post("/v1/scopes", json={"scope_id": SHARED, "title": "s"}).status_code == 201
        scope = {"scope_id": OWN, "title": "o", "context_references": [SHARED]}
        assert admin.post("/v1/scopes", json=scope).status_code == 201
        for sid in (OWN, SHARED):
            r = admin.post(f"/v1/scopes/{sid}/atomic-memory", json={"text": f"canary rollout in {sid}", "kind": "fact"})
            assert r.status_code == 201
        body = {"scope_id": OWN, "query": "canary rollout"}

        def scopes_seen(client: httpx.Client) -> set[str]:
            answer = client.post("/v1/context/explain", json=body).json()
            return {c["artifact_address"]["scope_id"] for c in answer["candidates"]}

        assert scopes_seen(viewer) == {OWN}
        assert scopes_seen(admin) == {OWN, SHARED}
        refused = viewer.post("/v1/context/explain", json={"scope_id": SHARED, "query": "canary"})
        assert refused.status_code == 403
        admin.close()
        viewer.close()


def test_hybrid_run_reports_both_channels_and_the_fused_score(tmp_path: Path) -> None:
    with start_embedding_server(32) as embeddings:
        settings = {
            "POWERCONTEXT_EMBEDDINGS": "openai-compatible",
            "POWERCONTEXT_EMBEDDINGS_BASE_URL": embeddings.base_url,
            "POWERCONTEXT_EMBEDDINGS_MODEL": "fake-embed",
            "POWERCONTEXT_EMBEDDINGS_DIMENSION": "32",
        }
        with live_server(tmp_path, settings) as live:
            api = Api(live.base_url)
            sid = api.new_scope()
            for text in ("Blue/green deploys for payments.", "Payments settle nightly.", "Lunch is at noon."):
                api.add(sid, text, "fact")
            explained = _explain(api, {"scope_id": sid, "query": "payments deploys", "include_receipt": True})
            prepared = strict_json(api.prepare(sid, "payments deploys", include_receipt=True).content)
            api.close()
    assert explained["prepared"]["content"] == prepared["content"]
    memories = [c for c in explained["candidates"] if c["family"] == "atomic-memory"]
    assert len(memories) == 3, "the vector channel ranks every embedded head, so all three are candidates"
    for c in memories:
        assert {r["channel"] for r in c["ranks"]} >= {"vector", "fused"}
        assert c["cosine"] is not None and c["fused"] is not None
    top = min(memories, key=lambda c: c["rank"])
    assert top["matched_terms"] == ["payment", "deploy"]
    lunch = next(c for c in memories if not c["matched_terms"])
    assert lunch["bm25"] is None, "no term matched: it is in the vector list only"


def test_cli_and_both_clients_explain(crowded: tuple[Api, str, list[str]], server: LiveServer) -> None:
    import asyncio
    import sys

    from powercontext.client import PowerContextClient
    from powercontext.client.sync import SyncPowerContextClient
    from powercontext.contract.explain import ExplainContextRequest

    _, sid, ids = crowded
    env = {"PATH": "/usr/bin:/bin", "POWERCONTEXT_URL": server.base_url}
    command = [sys.executable, "-m", "powercontext", "context", "explain", "-s", sid, "-q", "release train"]
    done = forked.run(
        [*command, "--expect", ids[19], "--json"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert [e["where"] for e in answer["expected"]] == ["below_pool"]
    table = forked.run(command, capture_output=True, text=True, env={**env, "COLUMNS": "200"}, timeout=60)
    assert table.returncode == 0, table.stderr
    assert "entry_limit" in table.stdout and "#1 (" in table.stdout and "experience: no candidates" in table.stdout

    request = ExplainContextRequest(scope_id=sid, query="release train", expected=[ids[0]])
    with SyncPowerContextClient(server.base_url) as client:
        synced = client.explain_context(request)

    async def explain_async() -> Any:
        async with PowerContextClient(server.base_url) as client:
            return await client.explain_context(request)

    awaited = asyncio.run(explain_async())
    assert synced.prepared.content == awaited.prepared.content
    assert [e.where for e in synced.expected] == ["candidate"]
    assert [c.artifact_address for c in synced.candidates] == [c.artifact_address for c in awaited.candidates]


def test_rerank_exclusions_and_widened_rounds_are_per_candidate(tmp_path: Path) -> None:
    settings = {"POWERCONTEXT_RERANK": "deterministic", "POWERCONTEXT_EXPANSION": "widen"}
    with live_server(tmp_path, settings) as live:
        api = Api(live.base_url)
        sid = api.new_scope()
        for i in range(40):
            api.add(sid, f"canary rollout step {i} " + "gate " * (i % 7), "note")
        api.add(sid, "The canary owner is the platform team.", "fact")
        body = {"scope_id": sid, "query": "canary rollout owner", "include_receipt": True}
        explained = _explain(api, body)
        prepared = strict_json(api.prepare(sid, "canary rollout owner", include_receipt=True).content)
        api.close()
    assert explained["prepared"]["content"] == prepared["content"]
    assert explained["prepared"]["receipt"]["selected"] == prepared["receipt"]["selected"]
    per_item = _reasons_add_up(explained)
    assert per_item[("atomic-memory", "rerank_not_selected")] > 0


def test_an_expected_id_past_the_runs_own_search_is_found_by_a_deeper_one(server: LiveServer) -> None:
    api = Api(server.base_url)
    sid = api.new_scope(prefix="explain-deep")
    items = [{"text": f"signal flare note {i}: " + "ballast " * i, "kind": "note"} for i in range(60)]
    r = api.post(f"/v1/scopes/{sid}/atomic-memory/batch", {"items": items})
    assert r.status_code == 201, r.text
    last = artifact_id(r.json()["items"][-1])  # the longest note ranks last, beyond three pools
    explained = _explain(api, {"scope_id": sid, "query": "signal flare", "expected": [last]})
    [landed] = explained["expected"]
    assert landed["where"] == "deeper_search"
    assert min(r["rank"] for r in landed["ranks"]) > 48
    api.close()


def test_the_documented_query_terms_are_the_ones_a_run_reports(server: LiveServer, tmp_path: Path) -> None:
    """docs/explain.md's example of ``query_terms`` and ``code_query_terms``, checked against a real run."""
    import re

    from tests.code_support import make_git_repo

    row = {
        m.group(1): (m.group(2), m.group(3))
        for m in re.finditer(r"^\| `(\w+)` \| [^`|]*\(`\"?([^`\"]+)\"?` → `([^`]+)`", DOC.read_text("utf-8"), re.M)
    }
    api = Api(server.base_url)
    try:
        sid = api.new_scope(prefix="explain-doc")
        query, terms = row["query_terms"]
        assert _explain(api, {"scope_id": sid, "query": query})["query_terms"] == terms.split()
        indexed = api.post(f"/v1/scopes/{sid}/code/index", {"path": str(make_git_repo(tmp_path / "repo"))})
        assert indexed.status_code == 200, indexed.text
        code_query, code_terms = row["code_query_terms"]
        code = _explain(api, {"scope_id": sid, "query": code_query, "include_code": True})
        assert code["code_query_terms"] == code_terms.split()
    finally:
        api.close()


DOC = Path(__file__).resolve().parents[2] / "docs" / "explain.md"
