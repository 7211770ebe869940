"""Explicit multi-family assembly: section order and limits, per-family omissions, and Receipt sizes
measured on representative payloads with real identity lengths."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import live_server
from tests.support import Api, parse_fragments, receipt_bytes, strict_json, unique

WORD = "ledgerword"


def topic(api: Api, sid: str, i: int) -> dict[str, Any]:
    body = {"title": f"{WORD} topic {i}", "body": f"What we know about {WORD} area {i}: settles nightly in UTC."}
    r = api.post(f"/v1/scopes/{sid}/topic-memory", body)
    assert r.status_code == 201, r.text
    return dict(r.json())


def experience(api: Api, sid: str, i: int) -> dict[str, Any]:
    proposal = {
        "situation": f"{WORD} reconciliation {i} drifted after a deploy",
        "what_worked": "replaying the day's journal from the last checkpoint",
        "what_to_avoid": "editing balances by hand",
    }
    r = api.post(f"/v1/scopes/{sid}/experience/candidates", proposal)
    assert r.status_code == 201, r.text
    review = {"decision": "approve"}
    approved = api.post(f"/v1/scopes/{sid}/experience/candidates/{r.json()['candidate_id']}/review", review)
    assert approved.status_code == 200, approved.text
    return dict(approved.json()["experience"])


def profile(api: Api, sid: str) -> None:
    entries = [{"key": "language", "value": "Python 3.11, typed"}, {"key": "style", "value": f"{WORD} is UTC"}]
    r = api.put(f"/v1/scopes/{sid}/profile", {"entries": entries})
    assert r.status_code in (200, 201), r.text


def scope(api: Api, references: list[str] | None = None) -> str:
    # Real identity lengths: a project-style Scope id of 40 characters.
    sid = f"project:payments-{unique('p')[:22]}"
    r = api.post("/v1/scopes", {"scope_id": sid, "title": "Payments", "context_references": references or []})
    assert r.status_code == 201, r.text
    return sid


def sections(memory: int, topics: int, profiles: int, experiences: int) -> dict[str, Any]:
    return {
        "sections": [
            {"family": "memory", "limit": memory},
            {"family": "topic-memory", "limit": topics},
            {"family": "profile", "limit": profiles},
            {"family": "experience", "limit": experiences},
        ]
    }


def prepare(api: Api, sid: str, **extra: Any) -> tuple[dict[str, Any], int]:
    r = api.post(
        "/v1/context/prepare", {"scope_id": sid, "query": f"{WORD} settlement", "include_receipt": True, **extra}
    )
    assert r.status_code == 200, r.text
    body = strict_json(r.content)
    assert "receipt" in body, "the Receipt was dropped"
    return body, len(receipt_bytes(r.content))


def families_in_order(body: dict[str, Any]) -> list[str]:
    return [s["family"] for s in body["receipt"]["selected"]]


@pytest.fixture(scope="module")
def two_scopes(server: Any) -> Iterator[tuple[Api, str, str]]:
    api = Api(server.base_url)
    other = scope(api)
    main = scope(api, [other])
    for sid in (main, other):
        api.post(
            f"/v1/scopes/{sid}/atomic-memory/batch",
            {"items": [{"text": f"{WORD} memory {i} in the payments ledger", "kind": "fact"} for i in range(6)]},
        )
        profile(api, sid)
        for i in range(2):
            experience(api, sid, i)
    for i in range(9):
        topic(api, main, i)
    yield api, main, other
    api.close()


def test_eighteen_items_in_section_order_across_two_scopes(two_scopes: tuple[Api, str, str]) -> None:
    api, main, other = two_scopes
    body, size = prepare(api, main, max_bytes=32768, assembly=sections(8, 6, 2, 2))
    families = families_in_order(body)
    assert families == ["atomic-memory"] * 8 + ["topic-memory"] * 6 + ["profile"] * 2 + ["experience"] * 2
    receipt = body["receipt"]
    assert {s["artifact_address"]["scope_id"] for s in receipt["selected"]} == {main, other}
    # The rendered content cites exactly the selected items, in the same order.
    cited = [f.address for f in parse_fragments(body["content"])]
    assert cited == [s["artifact_address"] for s in receipt["selected"]]
    omitted = {(g["family"], g["reason"]): g["count"] for g in receipt["omitted"]}
    assert omitted == {
        ("atomic-memory", "family_limit"): 12 - 8,  # 6 memories in each of two Scopes
        ("topic-memory", "family_limit"): 8 - 6,  # the request Scope's 8-candidate window, 6 injected
        ("experience", "family_limit"): 4 - 2,
    }
    print(f"Receipt with 18 selected historical items across two Scopes: {size} bytes")
    assert size <= 8192


def test_profile_and_topic_calls_are_counted_as_they_ran(two_scopes: tuple[Api, str, str]) -> None:
    api, main, _ = two_scopes
    body, _ = prepare(api, main, max_bytes=32768, assembly=sections(1, 1, 2, 1))
    searches = {(g["family"], g["mode"], g["outcome"]): g["count"] for g in body["receipt"]["retrieval"]["searches"]}
    assert searches == {
        ("atomic-memory", "fts", "completed"): 2,  # one per Scope
        ("topic-memory", "fts", "completed"): 1,  # the request Scope only
        ("profile", "snapshot", "completed"): 2,  # one snapshot read per Scope
        ("experience", "fts", "completed"): 2,
    }


def test_twenty_six_items_fit_the_receipt_bound(api: Api) -> None:
    """8 Atomic Memory + 8 Topic Memory + 8 Profile + 2 Experience. A Profile is one per Scope, so eight
    Profiles need the request Scope and seven referenced Scopes (all new: the shared Server serves them alone)."""
    references = [scope(api) for _ in range(7)]
    main = scope(api, references)
    for sid in (main, *references):
        profile(api, sid)
        api.post(f"/v1/scopes/{sid}/atomic-memory", {"text": f"{WORD} memory in {sid}", "kind": "fact"})
    for i in range(8):
        topic(api, main, i)
    for i in range(2):
        experience(api, main, i)
    body, size = prepare(api, main, max_bytes=32768, assembly=sections(8, 8, 8, 2))
    assert (
        families_in_order(body) == ["atomic-memory"] * 8 + ["topic-memory"] * 8 + ["profile"] * 8 + ["experience"] * 2
    )
    assert len({s["artifact_address"]["scope_id"] for s in body["receipt"]["selected"]}) == 8
    print(f"Receipt with 26 selected historical items across eight Scopes: {size} bytes")
    assert size <= 8192


def test_each_requested_family_without_candidates_is_flagged(api: Api) -> None:
    sid = api.new_scope()
    body, _ = prepare(api, sid, assembly=sections(8, 8, 8, 2))
    receipt = body["receipt"]
    assert body["status"] == "empty"
    assert receipt["omitted"] == [
        {"family": f, "reason": "not_retrieved", "count": 1}
        for f in ("atomic-memory", "topic-memory", "experience", "profile")
    ]
    searches = {(g["family"], g["mode"], g["outcome"]) for g in receipt["retrieval"]["searches"]}
    # Searches that ran and found nothing are completed; the Profile read had no committed head: not run.
    assert searches == {
        ("atomic-memory", "fts", "completed"),
        ("topic-memory", "fts", "completed"),
        ("experience", "fts", "completed"),
        ("profile", "none", "not_run"),
    }


def test_unrequested_families_have_no_group_and_no_flag(api: Api) -> None:
    sid = api.new_scope()
    body, _ = prepare(api, sid, assembly={"sections": [{"family": "topic-memory", "limit": 3}]})
    receipt = body["receipt"]
    assert [g["family"] for g in receipt["retrieval"]["searches"]] == ["topic-memory"]
    assert receipt["omitted"] == [{"family": "topic-memory", "reason": "not_retrieved", "count": 1}]


def test_empty_sections_assemble_nothing_and_search_nothing(api: Api) -> None:
    sid = api.new_scope()
    api.add(sid, f"{WORD} present", "fact")
    body, _ = prepare(api, sid, assembly={"sections": []})
    assert body["status"] == "empty"
    assert body["receipt"]["retrieval"]["searches"] == []
    assert body["receipt"]["omitted"] == []


def test_combined_entry_limit_on_the_default_path(api: Api) -> None:
    sid = api.new_scope()
    api.post(
        f"/v1/scopes/{sid}/atomic-memory/batch",
        {"items": [{"text": f"{WORD} fact {i}", "kind": "fact"} for i in range(6)]},
    )
    for i in range(4):
        topic(api, sid, i)
    for i in range(3):
        experience(api, sid, i)
    body, _ = prepare(api, sid, max_bytes=32768)
    families = families_in_order(body)
    assert len(families) == 8  # combined default limit across families
    assert families.count("experience") <= 2
    assert families[:3] == ["atomic-memory", "topic-memory", "experience"]  # interleaved by rank
    omitted = {(g["family"], g["reason"]): g["count"] for g in body["receipt"]["omitted"]}
    assert omitted.get(("experience", "family_limit"), 0) == 1  # the third Experience
    assert sum(n for (_, reason), n in omitted.items() if reason == "entry_limit") == 6 + 4 + 3 - 8 - 1


@pytest.mark.parametrize(
    "assembly",
    [
        None,
        {"sections": [{"family": "experience", "limit": 3}]},
        {"sections": [{"family": "memory", "limit": 9}]},
        {"sections": [{"family": "code", "limit": 1}]},
        {"sections": [{"family": "memory", "limit": 1}, {"family": "memory", "limit": 2}]},
        {"sections": [{"family": "memory", "limit": 1}], "format": "markdown"},
    ],
)
def test_invalid_assembly_is_a_422(api: Api, assembly: Any) -> None:
    r = api.post("/v1/context/prepare", {"scope_id": "x", "query": "q", "assembly": assembly})
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "invalid-request"


def test_a_disabled_family_has_no_group(tmp_path: Path) -> None:
    with live_server(tmp_path, {"POWERCONTEXT_DISABLED_FAMILIES": "experience"}) as live:
        api = Api(live.base_url)
        sid = api.new_scope()
        body, _ = prepare(api, sid)
        assert "experience" not in {g["family"] for g in body["receipt"]["retrieval"]["searches"]}
        assert "experience" not in {g["family"] for g in body["receipt"]["omitted"]}
        assert "experience" not in api.get("/v1/capabilities").json()["families"]
        r = api.post(
            "/v1/context/prepare",
            {"scope_id": sid, "query": "q", "assembly": {"sections": [{"family": "experience", "limit": 1}]}},
        )
        assert (r.status_code, r.json()["error"]["code"]) == (409, "family-disabled")
        api.close()
