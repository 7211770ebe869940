"""The Server takes integers and booleans only as the JSON types its schema names, on every route alike;
an integer may be written with a zero fraction (``8.0``), which JSON Schema counts as an integer; query
parameters, which are text by nature, still parse as numbers."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import Api, artifact_id, error_code


def prepare(api: Api, scope_id: str, **extra: Any) -> Any:
    return api.prepare(scope_id, "strict wire types", **extra)


@pytest.mark.parametrize("value", ["yes", "true", "1", 1, 0, 1.0])
def test_include_receipt_is_a_strict_boolean_or_null(api: Api, value: object) -> None:
    scope_id = api.new_scope()
    r = prepare(api, scope_id, include_receipt=value)
    assert r.status_code == 422, r.text
    assert error_code(r) == "invalid-request"
    assert "include_receipt" in r.json()["error"]["message"]


def test_include_receipt_true_false_and_null_are_accepted(api: Api) -> None:
    scope_id = api.new_scope()
    api.add(scope_id, "strict wire types are checked here")
    assert "receipt" in prepare(api, scope_id, include_receipt=True).json()
    for value in (False, None):
        r = prepare(api, scope_id, include_receipt=value)
        assert r.status_code == 200, r.text
        assert "receipt" not in r.json()


@pytest.mark.parametrize("value", [1000.5, "1000", True])
def test_max_bytes_is_a_strict_integer(api: Api, value: object) -> None:
    r = prepare(api, api.new_scope(), max_bytes=value)
    assert (r.status_code, error_code(r)) == (422, "invalid-request"), r.text
    assert prepare(api, api.new_scope(), max_bytes=1000).status_code == 200
    assert prepare(api, api.new_scope(), max_bytes=1000.0).status_code == 200


@pytest.mark.parametrize("value", ["1", 1.5, True])
def test_expected_revision_is_a_strict_integer(api: Api, value: object) -> None:
    scope_id = api.new_scope()
    memory_id = artifact_id(api.add(scope_id, "a memory to revise"))
    path = f"/v1/scopes/{scope_id}/atomic-memory/{memory_id}"
    r = api.put(path, {"text": "revised", "expected_revision": value})
    assert (r.status_code, error_code(r)) == (422, "invalid-request"), r.text
    assert api.put(path, {"text": "revised", "expected_revision": 1.0}).status_code == 200
    assert api.put(path, {"text": "revised again", "expected_revision": 2}).status_code == 200


SEARCHES = ["/atomic-memory/search", "/topic-memory/search", "/experience/search", "/code/query"]


@pytest.mark.parametrize("route", SEARCHES)
def test_limit_is_treated_alike_on_every_search(api: Api, route: str) -> None:
    scope_id = api.new_scope()
    path = f"/v1/scopes/{scope_id}{route}"
    for refused in (8.5, "8", True):
        r = api.post(path, {"query": "anything", "limit": refused})
        assert (r.status_code, error_code(r)) == (422, "invalid-request"), (refused, r.text)
    for accepted in (8, 8.0):
        r = api.post(path, {"query": "anything", "limit": accepted})
        assert r.status_code == 200, r.text


def test_assembly_section_limit_and_include_code_are_strict(api: Api) -> None:
    scope_id = api.new_scope()
    section = {"sections": [{"family": "memory", "limit": 2.5}]}
    assert prepare(api, scope_id, assembly=section).status_code == 422
    assert prepare(api, scope_id, assembly={"sections": [{"family": "memory", "limit": 2.0}]}).status_code == 200
    assert prepare(api, scope_id, include_code="true").status_code == 422
    assert prepare(api, scope_id, assembly={"sections": [{"family": "memory", "limit": 2}]}).status_code == 200


def test_query_parameters_still_parse_from_text(api: Api) -> None:
    scope_id = api.new_scope()
    query = {"fingerprint": "f" * 16, "path": "a.py", "file_sha256": "sha256:" + "0" * 64}
    r = api.http.get(f"/v1/scopes/{scope_id}/code/snippet", params={**query, "start_line": "1", "end_line": "2"})
    assert r.status_code == 404 and error_code(r) == "code-not-found", r.text  # parsed, then not found
    bad = api.http.get(f"/v1/scopes/{scope_id}/code/snippet", params={**query, "start_line": "one", "end_line": "2"})
    assert (bad.status_code, error_code(bad)) == (422, "invalid-request")


def test_the_published_schema_says_boolean_or_null_for_include_receipt(api: Api) -> None:
    schema = api.get("/openapi.json").json()["components"]["schemas"]["PrepareContextRequest"]
    types = {option["type"] for option in schema["properties"]["include_receipt"]["anyOf"]}
    assert types == {"boolean", "null"}
    assert schema["properties"]["max_bytes"]["type"] == "integer"
