"""RFC 1435 acceptance items for this slice, over HTTP against the real server subprocess."""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from powercontext.contract.receipt import PreparedContextReceipt
from tests.conftest import LiveServer
from tests.support import (
    FOUR_KEYS,
    REQUEST_ID_HEADER,
    Api,
    artifact_id,
    error_code,
    parse_fragments,
    receipt_bytes,
    sha256_of,
    strict_json,
    unique,
)

RECEIPT_SCHEMA = "powercontext.prepared-context-receipt.v1"


@pytest.fixture
def api(backend_server: LiveServer) -> Iterator[Api]:
    """Every test here runs against the SQLite server and the embedded-seekdb server."""
    client = Api(backend_server.base_url)
    try:
        yield client
    finally:
        client.close()


def fts_search(family: str, count: int = 1) -> dict[str, Any]:
    return {
        "round": 0,
        "family": family,
        "mode": "fts",
        "outcome": "completed",
        "fallback_reason": "none",
        "count": count,
    }


# One Scope, no provider: the default recall runs one completed full-text search per family, a normal
# choice under `auto` (no fallback).
ONE_FTS_SEARCH = fts_search("atomic-memory")
DEFAULT_SEARCHES = [ONE_FTS_SEARCH, fts_search("topic-memory"), fts_search("experience")]
# The default recall also asks Topic Memory and Experience; a Scope without them flags both.
NO_TOPICS_OR_EXPERIENCE = [
    {"family": "topic-memory", "reason": "not_retrieved", "count": 1},
    {"family": "experience", "reason": "not_retrieved", "count": 1},
]
NOTHING_RETRIEVED = [{"family": "atomic-memory", "reason": "not_retrieved", "count": 1}, *NO_TOPICS_OR_EXPERIENCE]


def prepare_ok(api: Api, scope_id: str, query: str, **extra: Any) -> tuple[httpx.Response, dict[str, Any]]:
    r = api.prepare(scope_id, query, **extra)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    return r, strict_json(r.content)


def with_receipt(api: Api, scope_id: str, query: str, **extra: Any) -> tuple[httpx.Response, dict[str, Any]]:
    r, body = prepare_ok(api, scope_id, query, include_receipt=True, **extra)
    assert set(body) == FOUR_KEYS | {"receipt"}, "a Receipt was requested and should have been built"
    return r, body


def query_digest(query: str) -> str:
    return "sha256:" + hashlib.sha256(unicodedata.normalize("NFC", query.strip()).encode("utf-8")).hexdigest()


def check_receipt_against_content(response: httpx.Response, body: dict[str, Any], query: str, max_bytes: int) -> None:
    """Everything a Receipt must say about the content it came with, computed independently."""
    receipt = body["receipt"]
    assert receipt["schema"] == RECEIPT_SCHEMA
    assert receipt["policy_id"] == RECEIPT_SCHEMA
    assert receipt["receipt_id"] == response.headers[REQUEST_ID_HEADER]
    assert receipt["query_digest"] == query_digest(query)
    assert receipt["requested_max_bytes"] == max_bytes
    assert receipt["used_bytes"] == body["content_bytes"]
    assert len(receipt_bytes(response.content)) <= 8192
    assert strict_json(receipt_bytes(response.content)) == receipt
    # The published schema accepts it as sent (the built-in assembler writes plain data).
    assert (
        PreparedContextReceipt.model_validate_json(receipt_bytes(response.content)).model_dump(mode="json") == receipt
    )
    if body["status"] == "empty":
        assert body["content"] is None and body["content_bytes"] == 0
        assert receipt["content_digest"] is None
        assert receipt["selected"] == []
        assert receipt["truncated"] is False
        return
    content = body["content"]
    assert body["content_bytes"] == len(content.encode("utf-8")) <= max_bytes
    assert receipt["content_digest"] == "sha256:" + hashlib.sha256(content.encode("utf-8")).hexdigest()
    fragments = parse_fragments(content)
    selected = receipt["selected"]
    # Injection order, one-to-one with the citations in content.
    assert [s["artifact_address"] for s in selected] == [f.address for f in fragments]
    assert [s["family"] for s in selected] == [f.address["artifact"]["family"] for f in fragments]
    assert [s["rendered_bytes"] for s in selected] == [f.size for f in fragments]
    assert [s["truncated"] for s in selected] == [f.item["truncated"] for f in fragments]
    assert receipt["truncated"] is any(f.item["truncated"] for f in fragments)
    for s in selected:
        assert set(s) == {"family", "artifact_address", "rendered_bytes", "truncated"}
    for stage in receipt["stages"]:
        assert stage["count"] >= 1 and stage["duration_ms"] >= 0


# -- ready and liveness ------------------------------------------------------------------------


def test_health_endpoints(api: Api) -> None:
    ready = api.http.get("/health/ready")
    assert (ready.status_code, ready.json()) == (200, {"status": "ready"})
    live = api.http.get("/health/live")
    assert live.status_code == 200
    assert REQUEST_ID_HEADER in live.headers


def test_capabilities_report_receipt_policy_and_limits(api: Api) -> None:
    caps = api.http.get("/v1/capabilities").json()
    assert RECEIPT_SCHEMA in caps["receipt_policies"]
    assert "powercontext.prepared-context.v1" in caps["context_versions"]
    assert "atomic-memory" in caps["families"]
    assert "vector" not in caps["search_modes"] and "fts" in caps["search_modes"]
    assert caps["limits"]["max_bytes_min"] == 512 and caps["limits"]["max_bytes_max"] == 32768
    assert caps["limits"]["query_max_chars"] == 8192 and caps["limits"]["body_max_bytes"] == 8000


# -- four keys without a Receipt ---------------------------------------------------------------

FLAGS = [
    pytest.param({}, id="omitted"),
    pytest.param({"include_receipt": False}, id="false"),
    pytest.param({"include_receipt": None}, id="null"),
]


@pytest.mark.parametrize("flag", FLAGS)
def test_empty_without_receipt_has_exactly_four_keys(api: Api, flag: dict[str, Any]) -> None:
    sid = api.new_scope()
    r, body = prepare_ok(api, sid, "anything at all", **flag)
    assert set(body) == FOUR_KEYS
    assert body == {
        "schema": "powercontext.prepared-context.v1",
        "status": "empty",
        "content": None,
        "content_bytes": 0,
    }
    assert b'"receipt"' not in r.content


@pytest.mark.parametrize("flag", FLAGS)
def test_ready_without_receipt_has_exactly_four_keys(api: Api, flag: dict[str, Any]) -> None:
    sid = api.new_scope()
    api.add(sid, "We chose SQLite because the runtime must embed its store", "decision")
    r, body = prepare_ok(api, sid, "Why did we choose SQLite?", **flag)
    assert set(body) == FOUR_KEYS
    assert body["status"] == "ready"
    assert b'"receipt":' not in r.content
    assert body["content_bytes"] == len(body["content"].encode("utf-8"))


# -- empty -------------------------------------------------------------------------------------


def test_empty_with_receipt(api: Api) -> None:
    sid = api.new_scope()
    query = "  nothing stored matches this  "
    r, body = with_receipt(api, sid, query, max_bytes=4096)
    assert (body["status"], body["content"], body["content_bytes"]) == ("empty", None, 0)
    receipt = body["receipt"]
    check_receipt_against_content(r, body, query, 4096)
    assert receipt["content_digest"] is None
    assert receipt["used_bytes"] == 0
    assert receipt["omitted"] == NOTHING_RETRIEVED
    assert receipt["retrieval"]["searches"] == DEFAULT_SEARCHES
    assert receipt["retrieval"]["rounds"] == [{"round": 0, "outcome": "completed", "retained": True}]
    assert receipt["retrieval"]["rerank_configs"] == [] and receipt["retrieval"]["reranks"] == []
    assert receipt["non_deterministic"] is False


def test_empty_scope_with_memories_that_do_not_match(api: Api) -> None:
    sid = api.new_scope()
    api.add(sid, "unrelated memory about lunch", "note")
    _, body = with_receipt(api, sid, "kubernetes")
    assert body["status"] == "empty"
    assert body["receipt"]["omitted"] == NOTHING_RETRIEVED


# -- ready -------------------------------------------------------------------------------------


def test_ready_receipt_explains_exactly_the_returned_content(api: Api) -> None:
    sid = api.new_scope()
    texts = [
        "We chose SQLite for the embedded store because it needs no server",
        "SQLite WAL mode lets readers proceed while one writer commits",
        "Postgres was rejected: operating a database server is out of scope",
    ]
    created = [api.add(sid, t, "decision") for t in texts]
    query = "Why did we choose SQLite?"
    r, body = with_receipt(api, sid, query, max_bytes=8000)
    assert body["status"] == "ready"
    check_receipt_against_content(r, body, query, 8000)
    receipt = body["receipt"]
    selected_ids = [s["artifact_address"]["artifact"]["artifact_id"] for s in receipt["selected"]]
    sqlite_ids = {artifact_id(m) for m in created[:2]}
    assert set(selected_ids) == sqlite_ids  # the Postgres memory does not mention SQLite
    for s in receipt["selected"]:
        assert s["artifact_address"]["scope_id"] == sid
        assert s["artifact_address"]["artifact"] == {
            "family": "atomic-memory",
            "artifact_id": s["artifact_address"]["artifact"]["artifact_id"],
            "revision": 1,
        }
    assert receipt["omitted"] == NO_TOPICS_OR_EXPERIENCE
    assert receipt["retrieval"]["searches"] == DEFAULT_SEARCHES
    # The same request without the flag injects byte-identical content.
    _, plain = prepare_ok(api, sid, query, max_bytes=8000)
    assert plain == {k: body[k] for k in FOUR_KEYS}


def test_receipt_does_not_repeat_query_or_bodies(api: Api) -> None:
    sid = api.new_scope()
    body_text = "Quokka-lantern decision: rotate credentials weekly"
    api.add(sid, body_text, "decision")
    r, body = with_receipt(api, sid, "quokka-lantern rotation policy")
    raw = receipt_bytes(r.content).decode("utf-8")
    assert "quokka" not in raw.lower() and "lantern" not in raw.lower()
    assert "rotate" not in raw and "credentials" not in raw
    assert body["status"] == "ready"


def test_stages_and_search_counts_match_the_searched_scopes(api: Api) -> None:
    b, c = api.new_scope(), api.new_scope()
    a = api.new_scope([b, c])
    for sid in (a, b, c):
        api.add(sid, f"stageword memory in {sid}", "fact")
    _, body = with_receipt(api, a, "stageword")
    receipt = body["receipt"]
    searches = receipt["retrieval"]["searches"]
    # Atomic Memory and Experience: one search per Scope (a and its two references); Topic Memory
    # reads the request Scope only, so one search, not one per Scope.
    assert searches == [fts_search("atomic-memory", 3), fts_search("topic-memory", 1), fts_search("experience", 3)]
    stages = receipt["stages"]
    names = [s["stage"] for s in stages]
    assert len(names) == len(set(names)), "each stage appears once, aggregated"
    assert all(s["count"] >= 1 for s in stages)
    by_name = {s["stage"]: s for s in stages}
    assert by_name["memory.search"]["count"] == 3
    assert by_name["experience.search"]["count"] == 3
    assert by_name["topic_memory.search"]["count"] == 1
    assert {s["artifact_address"]["scope_id"] for s in receipt["selected"]} == {a, b, c}


def test_selected_plus_omitted_accounts_for_every_candidate(api: Api) -> None:
    sid = api.new_scope()
    for i in range(11):
        api.add(sid, f"accountword memory number {i}", "fact")
    _, body = with_receipt(api, sid, "accountword", max_bytes=32768)
    receipt = body["receipt"]
    assert len(receipt["selected"]) == 8  # the default combined entry limit
    omitted = {(g["family"], g["reason"]): g["count"] for g in receipt["omitted"] if g["reason"] != "not_retrieved"}
    assert sum(omitted.values()) == 11 - 8
    assert set(omitted) <= {("atomic-memory", "family_limit"), ("atomic-memory", "entry_limit")}
    assert len(parse_fragments(body["content"])) == 8


# -- truncation --------------------------------------------------------------------------------


def test_body_over_2000_bytes_is_capped_and_marked_truncated(api: Api) -> None:
    sid = api.new_scope()
    long_text = "capword " + "the migration plan covers every table and index " * 70  # ~3,400 bytes
    assert len(long_text.encode()) > 2000
    api.add(sid, long_text, "state")
    r, body = with_receipt(api, sid, "capword", max_bytes=32768)
    check_receipt_against_content(r, body, "capword", 32768)
    (fragment,) = parse_fragments(body["content"])
    injected = fragment.item["content"]
    assert fragment.item["truncated"] is True
    assert injected.endswith("…") and long_text.startswith(injected[:-1])
    assert len(injected.encode("utf-8")) <= 2000
    assert body["receipt"]["truncated"] is True
    assert body["receipt"]["selected"][0]["truncated"] is True


def test_small_max_bytes_forces_truncation(api: Api) -> None:
    sid = api.new_scope()
    text = "budgetword " + "数据迁移需要在维护窗口内完成 " * 40  # multibyte, ~1,700 bytes
    api.add(sid, text, "constraint")
    _, roomy = prepare_ok(api, sid, "budgetword", max_bytes=8000)
    assert parse_fragments(roomy["content"])[0].item["truncated"] is False
    max_bytes = 700
    r, body = with_receipt(api, sid, "budgetword", max_bytes=max_bytes)
    check_receipt_against_content(r, body, "budgetword", max_bytes)
    assert body["content_bytes"] <= max_bytes
    (fragment,) = parse_fragments(body["content"])
    injected = fragment.item["content"]
    assert fragment.item["truncated"] is True
    assert injected.endswith("…") and text.startswith(injected[:-1])  # whole characters only
    assert len(injected.encode("utf-8")) >= 64
    assert body["receipt"]["truncated"] is True
    assert body["receipt"]["selected"][0]["truncated"] is True


def test_over_budget_empty_is_distinguishable_from_no_memory(api: Api) -> None:
    """At the smallest budget nothing fits here; the empty Receipt says why instead of "no Memory"."""
    sid = api.new_scope(prefix="s" * 200)  # a long Scope id makes every citation too big for 512 bytes
    api.add(sid, "overword tiny", "note")  # under 64 bytes: cannot be truncated
    api.add(sid, "overword " + "a longer memory body that could be truncated if there were room " * 3, "note")
    r, body = with_receipt(api, sid, "overword", max_bytes=512)
    check_receipt_against_content(r, body, "overword", 512)
    assert body["status"] == "empty"
    omitted = {(g["family"], g["reason"]): g["count"] for g in body["receipt"]["omitted"]}
    assert omitted == {
        ("atomic-memory", "below_min_bytes"): 1,
        ("atomic-memory", "no_fitting_truncation"): 1,
        ("topic-memory", "not_retrieved"): 1,
        ("experience", "not_retrieved"): 1,
    }
    assert ("atomic-memory", "not_retrieved") not in omitted


def test_duplicate_context_references_are_refused(api: Api) -> None:
    b = api.new_scope()
    r = api.http.post("/v1/scopes", json={"scope_id": unique("dup"), "title": "t", "context_references": [b, b]})
    assert r.status_code == 422
    assert error_code(r) == "invalid-request"


def test_context_references_keep_scope_on_every_selected_address(api: Api) -> None:
    b = api.new_scope()
    a = api.new_scope([b])
    in_a = api.add(a, "refword decision recorded in the request scope", "decision")
    in_b = api.add(b, "refword decision recorded in the referenced scope", "decision")
    r, body = with_receipt(api, a, "refword")
    check_receipt_against_content(r, body, "refword", 8000)
    selected = [s["artifact_address"] for s in body["receipt"]["selected"]]
    assert selected == [in_a["artifact_address"], in_b["artifact_address"]]  # request Scope first
    # Progressive inspection: each address is an exact read returning the injected text.
    for address, fragment in zip(selected, parse_fragments(body["content"]), strict=True):
        exact = api.read_address(address)
        assert exact["artifact_address"] == address
        assert exact["text"] == fragment.item["content"]
    # The address is Scope-qualified: the id alone does not resolve in the other Scope.
    assert api.head(a, artifact_id(in_b)).status_code == 404


# -- exact reads after lifecycle changes -------------------------------------------------------


def test_exact_reads_of_receipt_addresses_survive_forget_merge_retire_and_revise(api: Api) -> None:
    sid = api.new_scope()
    texts = {name: f"inspectword {name} memory body" for name in ("forget", "merge1", "merge2", "retire", "revise")}
    made = {name: api.add(sid, t, "fact") for name, t in texts.items()}
    _, body = with_receipt(api, sid, "inspectword")
    addresses = {
        s["artifact_address"]["artifact"]["artifact_id"]: s["artifact_address"] for s in body["receipt"]["selected"]
    }
    assert set(addresses) == {artifact_id(m) for m in made.values()}
    injected = {f.address["artifact"]["artifact_id"]: f.item["content"] for f in parse_fragments(body["content"])}

    ids = {name: artifact_id(m) for name, m in made.items()}
    assert api.lifecycle(sid, ids["forget"], "forget").status_code == 200
    assert api.lifecycle(sid, ids["retire"], "retire").status_code == 200
    merged = api.http.post(
        f"/v1/scopes/{sid}/atomic-memory/merges",
        json={
            "sources": [{"artifact_id": ids["merge1"], "revision": 1}, {"artifact_id": ids["merge2"], "revision": 1}],
            "text": "inspectword merged result",
            "kind": "fact",
        },
    )
    assert merged.status_code == 201, merged.text
    revised = api.http.put(
        f"/v1/scopes/{sid}/atomic-memory/{ids['revise']}",
        json={"text": "inspectword revised text", "expected_revision": 1},
    )
    assert revised.status_code == 200, revised.text

    expected_state = {
        "forget": "forgotten",
        "retire": "retired",
        "merge1": "merged",
        "merge2": "merged",
        "revise": "active",
    }
    for name, aid in ids.items():
        exact = api.read_address(addresses[aid])
        assert exact["artifact_address"] == addresses[aid], "never a newer head or the merge target"
        assert exact["text"] == injected[aid] == texts[name]
        assert exact["state"] == expected_state[name]
    assert api.read_address(addresses[ids["revise"]])["head_revision"] == 2
    assert api.read_address(addresses[ids["merge1"]])["merged_into"] == artifact_id(merged.json())

    # Only active heads are selected now: the merge result and the revised head.
    _, after = with_receipt(api, sid, "inspectword")
    now_selected = {
        (s["artifact_address"]["artifact"]["artifact_id"], s["artifact_address"]["artifact"]["revision"])
        for s in after["receipt"]["selected"]
    }
    assert now_selected == {(artifact_id(merged.json()), 1), (ids["revise"], 2)}


# -- digests and request bounds ----------------------------------------------------------------


def test_content_digest_is_sha256_of_returned_content(api: Api) -> None:
    sid = api.new_scope()
    api.add(sid, 'digestword with non-ASCII: café, 数据, 😀, and "quotes"\nnew line', "note")
    _, body = with_receipt(api, sid, "digestword")
    assert body["receipt"]["content_digest"] == sha256_of(body["content"].encode("utf-8"))
    # The raw wire bytes of content decode to the same string that was hashed.
    assert body["content_bytes"] == len(body["content"].encode("utf-8"))


def test_long_non_ascii_query_is_accepted_and_digested_after_normalization(api: Api) -> None:
    sid = api.new_scope()
    api.add(sid, "我们决定把数据迁移到新的集群", "decision")
    query = " " + ("数据迁移" * 700) + " "  # 2,802 characters, 8,400 UTF-8 bytes of CJK
    assert len(query) >= 2731 and len(query.encode("utf-8")) > 8192 and len(query) <= 8192
    r, body = with_receipt(api, sid, query)
    expected = "sha256:" + hashlib.sha256(unicodedata.normalize("NFC", query.strip()).encode("utf-8")).hexdigest()
    assert body["receipt"]["query_digest"] == expected
    assert body["status"] == "ready"
    check_receipt_against_content(r, body, query, 8000)


def test_query_digest_uses_nfc_of_the_trimmed_query(api: Api) -> None:
    sid = api.new_scope()
    decomposed = "\t Cafe\u0301 de\u0301cision \n"
    composed = "Café décision"
    _, one = with_receipt(api, sid, decomposed)
    _, two = with_receipt(api, sid, composed)
    expected = "sha256:" + hashlib.sha256(unicodedata.normalize("NFC", decomposed.strip()).encode()).hexdigest()
    assert one["receipt"]["query_digest"] == two["receipt"]["query_digest"] == expected
    assert expected == "sha256:" + hashlib.sha256(composed.encode()).hexdigest()


def test_query_character_bound(api: Api) -> None:
    sid = api.new_scope()
    assert api.prepare(sid, "q" * 8192).status_code == 200
    too_long = api.prepare(sid, "q" * 8193)
    assert too_long.status_code == 422
    assert error_code(too_long) == "invalid-request"


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_blank_query_is_rejected(api: Api, query: str) -> None:
    sid = api.new_scope()
    r = api.prepare(sid, query)
    assert r.status_code == 422 and error_code(r) == "invalid-request"


@pytest.mark.parametrize(("max_bytes", "status"), [(511, 422), (512, 200), (32768, 200), (32769, 422), (0, 422)])
def test_max_bytes_bounds(api: Api, max_bytes: int, status: int) -> None:
    sid = api.new_scope()
    r = api.prepare(sid, "anything", max_bytes=max_bytes)
    assert r.status_code == status
    if status == 422:
        assert error_code(r) == "invalid-request"


@pytest.mark.parametrize("extra", [{"unknown_field": 1}, {"receipt": None}, {"include_receipts": True}])
def test_unknown_request_field_is_rejected(api: Api, extra: dict[str, Any]) -> None:
    sid = api.new_scope()
    r = api.prepare(sid, "anything", **extra)
    assert r.status_code == 422
    assert error_code(r) == "invalid-request"


@pytest.mark.parametrize("scope_id", ["", " ", "\t\n", "s" * 257])
def test_scope_id_bounds(api: Api, scope_id: str) -> None:
    r = api.prepare(scope_id, "anything")
    assert r.status_code == 422 and error_code(r) == "invalid-request"


def test_longest_scope_id_is_a_plain_lookup(api: Api) -> None:
    r = api.prepare("s" * 256, "anything")
    assert r.status_code == 404 and error_code(r) == "scope-not-found"


def test_unknown_scope_is_404(api: Api) -> None:
    r = api.prepare("no-such-scope-" + "x" * 8, "anything", include_receipt=True)
    assert r.status_code == 404 and error_code(r) == "scope-not-found"


def test_malformed_json_is_invalid_request(api: Api) -> None:
    r = api.http.post("/v1/context/prepare", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422 and error_code(r) == "invalid-request"


# -- bounds on the Receipt itself ---------------------------------------------------------------


def test_representative_cross_scope_receipt_fits_8192_bytes(api: Api) -> None:
    """Eight selected items from two Scopes with long real ids, at the largest budget."""
    b = api.new_scope(prefix="b" * 200)
    a = api.new_scope([b], prefix="a" * 200)
    for i in range(6):
        api.add(a, f"sizeword request scope memory {i} " + "detail " * 40, "decision")
        api.add(b, f"sizeword referenced scope memory {i} " + "detail " * 40, "fact")
    r, body = with_receipt(api, a, "sizeword", max_bytes=32768)
    check_receipt_against_content(r, body, "sizeword", 32768)
    receipt = body["receipt"]
    assert len(receipt["selected"]) == 8
    assert {s["artifact_address"]["scope_id"] for s in receipt["selected"]} == {a, b}
    assert all(len(s["artifact_address"]["scope_id"]) > 200 for s in receipt["selected"])
    assert len(receipt_bytes(r.content)) <= 8192


def test_a_blank_query_gets_a_message_a_person_can_act_on(api: Api) -> None:
    r = api.prepare(api.new_scope(), "   \n\t ")
    assert r.status_code == 422
    assert error_code(r) == "invalid-request"
    assert r.json()["error"]["message"] == "query: must contain a non-space character"
