"""The served OpenAPI document is the checked-in contract, and it forbids ``"receipt": null``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.support import Api

SPEC_PATH = Path(__file__).resolve().parents[2] / "openapi" / "powercontext.yaml"


def _checked_in() -> dict[str, Any]:
    with SPEC_PATH.open(encoding="utf-8") as handle:
        loaded: dict[str, Any] = yaml.safe_load(handle)
    return loaded


def _allows_null(schema: dict[str, Any]) -> bool:
    if schema.get("nullable") is True or schema.get("type") == "null":
        return True
    if isinstance(schema.get("type"), list) and "null" in schema["type"]:
        return True
    return any(_allows_null(s) for key in ("anyOf", "oneOf") for s in schema.get(key, []))


def test_served_openapi_equals_checked_in_yaml(api: Api) -> None:
    served = api.http.get("/openapi.json")
    assert served.status_code == 200
    assert served.json() == _checked_in()


def test_prepared_context_schema_is_closed_and_receipt_not_nullable(api: Api) -> None:
    schemas = api.http.get("/openapi.json").json()["components"]["schemas"]
    prepared = schemas["PreparedContext"]
    assert prepared["additionalProperties"] is False
    assert set(prepared["properties"]) == {"schema", "status", "content", "content_bytes", "receipt"}
    receipt = prepared["properties"]["receipt"]
    assert not _allows_null(receipt)
    assert "receipt" not in prepared.get("required", [])
    assert {"schema", "status", "content", "content_bytes"} <= set(prepared.get("required", []))
    assert receipt.get("$ref", "").endswith("/PreparedContextReceipt")
    receipt_schema = schemas["PreparedContextReceipt"]
    assert receipt_schema["additionalProperties"] is False
    assert schemas["PrepareContextRequest"]["additionalProperties"] is False
    assert "include_receipt" in schemas["PrepareContextRequest"]["properties"]
    assert "include_receipt" not in schemas["PrepareContextRequest"].get("required", [])


def test_prepare_operation_declares_the_prepared_context_response(api: Api) -> None:
    doc = api.http.get("/openapi.json").json()
    op = doc["paths"]["/v1/context/prepare"]["post"]
    assert op["operationId"] == "prepare_context"
    ok = op["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok["$ref"].endswith("/PreparedContext")
    request = op["requestBody"]["content"]["application/json"]["schema"]
    assert request["$ref"].endswith("/PrepareContextRequest")


def test_every_route_that_takes_a_body_declares_the_415_it_answers(api: Api) -> None:
    paths = api.http.get("/openapi.json").json()["paths"]
    with_body = [(p, m, op) for p, ops in paths.items() for m, op in ops.items() if "requestBody" in op]
    assert with_body
    for path, method, operation in with_body:
        declared = operation["responses"].get("415")
        assert declared is not None, f"{method.upper()} {path}"
        assert declared["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorBody"}
    answer = api.http.post("/v1/context/prepare", content=b"{}", headers={"Content-Type": "text/plain"})
    assert answer.status_code == 415 and answer.json()["error"]["code"] == "unsupported-media-type"
