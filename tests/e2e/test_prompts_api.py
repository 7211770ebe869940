"""Scope-owned Prompts over HTTP against the live server subprocess: show, set custom, compare-and-set,
return to auto, retire, exact revision reads, content rules, access and an unhonourable custom head."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from powercontext.store.base import PromptContent, PromptDemonstration
from powercontext.store.sqlite import SqliteStore
from tests.conftest import LiveServer, live_server
from tests.support import Api, error_code

KEY = "memory.rerank"
MARKER = "zq-marker-instructions-7731"
DEMO = {
    "input": {"request": "why sqlite?", "candidates": ["we chose sqlite", "lunch is at noon"]},
    "expected_output": {"ranks": [1]},
}


def canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest_of(key: str, definition_version: int, text: str) -> str:
    record = {"compiled_text": text, "definition_version": definition_version, "key": key}
    return "sha256:" + hashlib.sha256(canonical(record).encode("utf-8")).hexdigest()


def show(api: Api, scope_id: str, key: str = KEY) -> dict[str, Any]:
    r = api.get(f"/v1/scopes/{scope_id}/prompts/{key}")
    assert r.status_code == 200, r.text
    return r.json()


def put(api: Api, scope_id: str, body: dict[str, Any], key: str = KEY) -> httpx.Response:
    return api.put(f"/v1/scopes/{scope_id}/prompts/{key}", body)


def custom(expected: int, instructions: str = MARKER, demos: list[Any] | None = None) -> dict[str, Any]:
    return {
        "expected_revision": expected,
        "mode": "custom",
        "instructions": instructions,
        "demonstrations": demos or [],
    }


def test_capabilities_name_the_registered_prompt_keys(api: Api) -> None:
    prompts = api.get("/v1/capabilities").json()["prompts"]
    assert set(prompts) == {"memory.rerank", "recall.expand", "memory.extract"}
    versions = {key: (e["status"], e["definition_version"], e["builtin_version"]) for key, e in prompts.items()}
    # memory.extract's definition 2 lets the model merge listed memories.
    assert versions == {
        "memory.rerank": ("supported", 1, 1),
        "recall.expand": ("supported", 1, 1),
        "memory.extract": ("supported", 2, 2),
    }


def test_set_custom_then_auto_changes_the_resolved_prompt_and_its_digest(api: Api) -> None:
    sid = api.new_scope()
    builtin = show(api, sid)
    assert (builtin["selection"], builtin["selected_version"], builtin["artifact_address"]) == ("built_in", 1, None)
    assert (builtin["head_revision"], builtin["head_state"], builtin["demonstration_count"]) == (0, None, 0)
    assert builtin["compiled_digest"] == digest_of(KEY, 1, builtin["compiled_text"])

    r = put(api, sid, custom(0, f"  {MARKER}\n", [DEMO]))
    assert r.status_code == 200, r.text
    written = r.json()
    assert written == show(api, sid)
    assert (written["selection"], written["selected_version"], written["head_revision"]) == ("artifact", 1, 1)
    assert written["artifact_address"] == {
        "scope_id": sid,
        "artifact": {"family": "prompt", "artifact_id": KEY, "revision": 1},
    }
    assert written["demonstration_count"] == 1
    text = written["compiled_text"]
    # The invariants first (the built-in starts with them), then the trimmed instructions, then the example.
    invariants = builtin["compiled_text"].split("\n\n")[0]
    assert text.startswith(invariants + "\n\n" + MARKER + "\n\nExamples:\n\n")
    assert text.endswith(f"Input: {canonical(DEMO['input'])}\nOutput: {canonical(DEMO['expected_output'])}")
    assert written["compiled_digest"] == digest_of(KEY, 1, text) != builtin["compiled_digest"]
    # The other key is untouched.
    assert show(api, sid, "recall.expand")["selection"] == "built_in"

    r = put(api, sid, {"expected_revision": 1, "mode": "auto"})
    assert r.status_code == 200, r.text
    back = r.json()
    assert (back["selection"], back["head_revision"], back["head_state"]) == ("built_in", 2, "active")
    assert back["compiled_digest"] == builtin["compiled_digest"]
    assert back["compiled_text"] == builtin["compiled_text"]

    listed = api.get(f"/v1/scopes/{sid}/prompts").json()["items"]
    assert [(i["key"], i["status"], i["head_revision"], i["head_mode"]) for i in listed] == [
        ("memory.rerank", "built_in", 2, "auto"),
        ("recall.expand", "built_in", 0, None),
        ("memory.extract", "built_in", 0, None),
    ]


def test_writes_are_compare_and_set_on_the_head_revision(api: Api) -> None:
    sid = api.new_scope()
    assert put(api, sid, custom(0, "first")).status_code == 200
    for stale in (0, 2, 7):
        r = put(api, sid, custom(stale, "second"))
        assert (r.status_code, error_code(r)) == (409, "revision-conflict")
    assert show(api, sid)["compiled_text"].endswith("\n\nfirst")
    assert put(api, sid, custom(1, "second")).json()["selected_version"] == 2


def test_retire_keeps_exact_revisions_readable_and_a_new_write_reactivates(api: Api) -> None:
    sid = api.new_scope()
    assert put(api, sid, custom(0, "one", [DEMO])).status_code == 200
    assert put(api, sid, custom(1, "two")).status_code == 200
    r = api.post(f"/v1/scopes/{sid}/prompts/{KEY}/lifecycle", {"action": "retire", "expected_revision": 1})
    assert (r.status_code, error_code(r)) == (409, "revision-conflict")
    r = api.post(f"/v1/scopes/{sid}/prompts/{KEY}/lifecycle", {"action": "retire", "expected_revision": 2})
    assert r.status_code == 200, r.text
    assert (r.json()["selection"], r.json()["head_state"]) == ("built_in", "retired")
    again = api.post(f"/v1/scopes/{sid}/prompts/{KEY}/lifecycle", {"action": "retire"})
    assert (again.status_code, error_code(again)) == (409, "artifact-not-active")

    first = api.get(f"/v1/scopes/{sid}/artifacts/prompt/{KEY}/revisions/1")
    assert first.status_code == 200, first.text
    body = first.json()
    assert body["artifact_address"]["artifact"] == {"family": "prompt", "artifact_id": KEY, "revision": 1}
    assert (body["state"], body["head_revision"], body["mode"], body["instructions"]) == ("retired", 2, "custom", "one")
    assert body["schema_version"] == "powercontext.prompt.v1"
    assert body["demonstrations"] == [DEMO]
    head = api.get(f"/v1/scopes/{sid}/artifacts/prompt/{KEY}").json()
    assert (head["artifact_address"]["artifact"]["revision"], head["instructions"]) == (2, "two")
    missing = api.get(f"/v1/scopes/{sid}/artifacts/prompt/{KEY}/revisions/3")
    assert (missing.status_code, error_code(missing)) == (404, "revision-not-found")

    revived = put(api, sid, custom(2, "three")).json()
    assert (revived["selection"], revived["selected_version"], revived["head_state"]) == ("artifact", 3, "active")


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (custom(0, " \n\t "), "prompt-instructions-required"),
        ({"expected_revision": 0, "mode": "auto", "instructions": MARKER}, "prompt-auto-not-empty"),
        ({"expected_revision": 0, "mode": "auto", "demonstrations": [DEMO]}, "prompt-auto-not-empty"),
        (custom(0, "x" * 32_769), "prompt-instructions-too-long"),
        (custom(0, MARKER, [DEMO] * 51), "too-many-prompt-demonstrations"),
        (custom(0, MARKER, [{**DEMO, "expected_output": {"ranks": [3]}}]), "invalid-prompt-demonstration"),
        (
            custom(0, MARKER, [{"input": {"request": MARKER}, "expected_output": {"ranks": [1]}}]),
            "invalid-prompt-demonstration",
        ),
        (
            custom(
                0,
                MARKER,
                [{"input": {"request": "q", "candidates": ["y" * 70_000]}, "expected_output": {"ranks": [1]}}],
            ),
            "prompt-demonstration-too-large",
        ),
        (
            custom(
                0,
                MARKER,
                [{"input": {"request": "q", "candidates": ["z" * 60_000]}, "expected_output": {"ranks": [1]}}] * 5,
            ),
            "prompt-too-large",
        ),
        ({**custom(0), "schema_version": "powercontext.prompt.v2"}, "invalid-request"),
        ({**custom(0), "mode": "manual"}, "invalid-request"),
        ({"mode": "custom", "instructions": MARKER}, "invalid-request"),
        ({**custom(0), "expected_revision": True}, "invalid-request"),
        ({**custom(0), "extra": 1}, "invalid-request"),
    ],
)
def test_invalid_content_is_refused_with_a_stable_code_and_nothing_is_written(
    api: Api, body: dict[str, Any], code: str
) -> None:
    sid = api.new_scope()
    r = put(api, sid, body)
    assert (r.status_code, error_code(r)) == (422, code)
    assert MARKER not in r.text  # error messages never echo the content
    assert show(api, sid)["head_revision"] == 0


def test_unknown_keys_and_scopes_are_404_with_stable_codes(api: Api) -> None:
    sid = api.new_scope()
    for r in (
        api.get(f"/v1/scopes/{sid}/prompts/memory.summarize"),
        put(api, sid, custom(0), key="memory.summarize"),
        api.post(f"/v1/scopes/{sid}/prompts/no.such/lifecycle", {"action": "retire"}),
    ):
        assert (r.status_code, error_code(r)) == (404, "unknown-prompt-key")
    assert "memory.rerank" in api.get(f"/v1/scopes/{sid}/prompts/nope").json()["error"]["message"]
    for r in (
        api.get("/v1/scopes/no-such-scope-x1/prompts/memory.rerank"),
        api.get("/v1/scopes/no-such-scope-x1/prompts"),
        put(api, "no-such-scope-x1", custom(0)),
    ):
        assert (r.status_code, error_code(r)) == (404, "scope-not-found")
    r = api.get(f"/v1/scopes/{sid}/artifacts/prompt/{KEY}")
    assert (r.status_code, error_code(r)) == (404, "artifact-not-found")
    r = api.post(f"/v1/scopes/{sid}/prompts/{KEY}/lifecycle", {"action": "retire"})
    assert (r.status_code, error_code(r)) == (404, "artifact-not-found")


def test_a_custom_head_that_cannot_be_honoured_is_503_never_the_builtin(api: Api, server: LiveServer) -> None:
    sid = api.new_scope()
    assert put(api, sid, custom(0, "valid")).status_code == 200
    # Another writer (or an older definition) left a revision the current definition refuses: write it
    # through the store itself, into the live server's own database.
    direct = SqliteStore(server.db_path)
    try:
        bad = PromptContent("custom", MARKER, (PromptDemonstration({"request": "q"}, {"queries": ["x"]}),))
        direct.commit_prompt(sid, KEY, 1, bad)
    finally:
        direct.close()
    r = api.get(f"/v1/scopes/{sid}/prompts/{KEY}")
    assert (r.status_code, error_code(r)) == (503, "prompt-unavailable")
    assert MARKER not in r.text
    listed = {i["key"]: i for i in api.get(f"/v1/scopes/{sid}/prompts").json()["items"]}
    assert (listed[KEY]["status"], listed[KEY]["compiled_digest"], listed[KEY]["head_revision"]) == (
        "unavailable",
        None,
        2,
    )
    # The fix is an ordinary write on that head.
    fixed = put(api, sid, {"expected_revision": 2, "mode": "auto"})
    assert fixed.status_code == 200 and fixed.json()["selection"] == "built_in"


# -- access: the compiled text and the bodies only for writers ---------------------------------

WRITER, READER = "prompt-writer-token-1Qz", "prompt-reader-token-8Kw"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("prompt-access")
    grants = {
        "principals": [
            {"name": "writer", "token_sha256": _digest(WRITER), "read": [], "write": ["team:p"]},
            {"name": "reader", "token_sha256": _digest(READER), "read": ["team:p"], "write": []},
        ]
    }
    (base / "access.json").write_text(json.dumps(grants), encoding="utf-8")
    with live_server(base, {"POWERCONTEXT_ACCESS_FILE": str(base / "access.json")}) as live:
        yield live


def _client(live: LiveServer, token: str) -> httpx.Client:
    return httpx.Client(base_url=live.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def test_only_a_caller_that_may_write_sees_the_compiled_text_and_bodies(guarded: LiveServer) -> None:
    with _client(guarded, WRITER) as writer, _client(guarded, READER) as reader:
        assert writer.post("/v1/scopes", json={"scope_id": "team:p", "title": "p"}).status_code == 201
        r = writer.put(f"/v1/scopes/team:p/prompts/{KEY}", json=custom(0, MARKER, [DEMO]))
        assert r.status_code == 200, r.text
        mine = writer.get(f"/v1/scopes/team:p/prompts/{KEY}").json()
        assert MARKER in mine["compiled_text"]

        seen = reader.get(f"/v1/scopes/team:p/prompts/{KEY}")
        assert seen.status_code == 200, seen.text
        theirs = seen.json()
        assert theirs["compiled_text"] is None
        assert {k: v for k, v in theirs.items() if k != "compiled_text"} == {
            k: v for k, v in mine.items() if k != "compiled_text"
        }
        assert MARKER not in seen.text
        listed = reader.get("/v1/scopes/team:p/prompts")
        assert listed.status_code == 200 and MARKER not in listed.text

        for path in (
            f"/v1/scopes/team:p/artifacts/prompt/{KEY}",
            f"/v1/scopes/team:p/artifacts/prompt/{KEY}/revisions/1",
        ):
            denied = reader.get(path)
            assert (denied.status_code, error_code(denied)) == (403, "scope-forbidden")
            assert MARKER not in denied.text
            assert writer.get(path).json()["instructions"] == MARKER
        refused = reader.put(f"/v1/scopes/team:p/prompts/{KEY}", json={"expected_revision": 1, "mode": "auto"})
        assert (refused.status_code, error_code(refused)) == (403, "scope-forbidden")
        retire = reader.post(f"/v1/scopes/team:p/prompts/{KEY}/lifecycle", json={"action": "retire"})
        assert (retire.status_code, error_code(retire)) == (403, "scope-forbidden")
        assert writer.get(f"/v1/scopes/team:p/prompts/{KEY}").json()["selection"] == "artifact"
    log = guarded.log_text()
    assert MARKER not in log
