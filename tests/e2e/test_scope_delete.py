"""Deleting a Scope: ``DELETE /v1/scopes/{scope_id}`` with ``{"confirm": scope_id}`` removes it and everything in
it, on each backend, and needs a grant of its own. Each backend runs in a Server of its own so the files grepped
hold only this test's data."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx

from tests import forked
from tests.conftest import live_server
from tests.e2e.test_purge import files_holding
from tests.seekdb_support import new_engine_dir, outside_engine_storage, require_seekdb
from tests.support import TLS, error_code

SECRET = "scope-secret-K4J5H6G7F8zebrahorizon"
ADMIN, WRITER, DELETER = "admin-token-delete", "writer-token-delete", "deleter-token-delete"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def access_file(base: Path) -> Path:
    principals = [
        {"name": "admin", "token_sha256": digest(ADMIN), "read": ["*"], "write": ["*"]},
        {"name": "writer", "token_sha256": digest(WRITER), "read": ["*"], "write": ["*"]},
        {"name": "deleter", "token_sha256": digest(DELETER), "read": ["*"], "delete": ["doomed:*"]},
    ]
    path = base / "access.json"
    path.write_text(json.dumps({"principals": principals}), encoding="utf-8")
    path.chmod(0o600)
    return path


def cli(url: str, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")} | {"POWERCONTEXT_TOKEN": token}
    return forked.run([sys.executable, "-m", "powercontext", *args, "--url", url], env=env, timeout=60)


def delete_flow(base_url: str) -> None:
    def client(token: str) -> httpx.Client:
        return httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60, verify=TLS)

    with client(ADMIN) as admin:
        for sid, refs in (("doomed:a", []), ("keeper:b", ["doomed:a"]), ("keeper:c", [])):
            body = {"scope_id": sid, "title": sid, "context_references": refs}
            assert admin.post("/v1/scopes", json=body).status_code == 201
        for i in range(5):
            admin.post("/v1/scopes/doomed:a/atomic-memory", json={"text": f"doomed note {i} {SECRET}", "kind": "note"})
        admin.post("/v1/scopes/doomed:a/topic-memory", json={"title": "Doomed topic", "body": f"body {SECRET}"})
        policy = {"explicit": "review", "model": "review"}  # a row of its own that must go with the Scope
        assert admin.put("/v1/scopes/doomed:a/extraction-policy", json=policy).status_code == 200
        admin.post("/v1/scopes/keeper:c/atomic-memory", json={"text": "keeper note stays", "kind": "note"})
        assert SECRET in admin.post("/v1/context/prepare", json={"scope_id": "keeper:b", "query": "doomed note"}).text

    with client(WRITER) as writer:  # write does not give delete
        refused = writer.request("DELETE", "/v1/scopes/doomed:a", json={"confirm": "doomed:a"})
        assert refused.status_code == 403 and error_code(refused) == "scope-forbidden"
        assert "ask for a 'delete' grant in the access file" in refused.json()["error"]["message"]
    with client(DELETER) as deleter:
        mismatch = deleter.request("DELETE", "/v1/scopes/doomed:a", json={"confirm": "doomed:b"})
        assert mismatch.status_code == 409 and error_code(mismatch) == "confirmation-mismatch"
        outside = deleter.request("DELETE", "/v1/scopes/keeper:c", json={"confirm": "keeper:c"})
        assert outside.status_code == 403
    no_yes = cli(base_url, DELETER, "scope", "delete", "doomed:a")
    assert no_yes.returncode == 2 and "without --yes" in no_yes.stderr
    done = cli(base_url, DELETER, "scope", "delete", "doomed:a", "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "scope_id": "doomed:a", "artifacts": 6, "sources": 0, "code_chunks": 0, "referenced_by": ["keeper:b"],
    }  # fmt: skip

    with client(ADMIN) as admin:
        assert admin.get("/v1/scopes/doomed:a").status_code == 404
        assert admin.get("/v1/scopes/keeper:b").json()["context_references"] == []
        answer = admin.post("/v1/context/prepare", json={"scope_id": "keeper:b", "query": "doomed note"})
        assert answer.status_code == 200 and SECRET not in answer.text
        assert (
            "keeper note stays"
            in admin.post("/v1/context/prepare", json={"scope_id": "keeper:c", "query": "keeper note"}).text
        )
        # The same id can be created again, empty.
        assert admin.post("/v1/scopes", json={"scope_id": "doomed:a", "title": "again"}).status_code == 201
        again = admin.post("/v1/scopes/doomed:a/atomic-memory/search", json={"query": "doomed note"}).json()
        assert again["hits"] == []
        assert admin.get("/v1/scopes/doomed:a/extraction-policy").json()["origin"] == "server"


def test_delete_a_scope_on_sqlite(tmp_path: Path) -> None:
    with live_server(tmp_path, {"POWERCONTEXT_ACCESS_FILE": str(access_file(tmp_path))}) as server:
        delete_flow(server.base_url)
        assert files_holding(tmp_path, SECRET.encode()) == []
    assert files_holding(tmp_path, SECRET.encode()) == []


def test_delete_a_scope_on_embedded_seekdb(tmp_path: Path) -> None:
    require_seekdb()
    settings = {"POWERCONTEXT_ACCESS_FILE": str(access_file(tmp_path))}
    with live_server(tmp_path, settings, store=f"seekdb://{new_engine_dir(tmp_path)}") as server:
        delete_flow(server.base_url)
    holding = files_holding(tmp_path, SECRET.encode())
    assert outside_engine_storage(holding) == [], holding


def test_delete_without_confirm_is_refused_before_anything_is_deleted(tmp_path: Path) -> None:
    with live_server(tmp_path) as server, httpx.Client(base_url=server.base_url, verify=TLS) as c:
        assert c.post("/v1/scopes", json={"scope_id": "keep:me", "title": "t"}).status_code == 201
        for body in (None, {}, {"confirm": ""}, {"confirm": "keep:me", "extra": 1}):
            refused = c.request("DELETE", "/v1/scopes/keep:me", json=body)
            assert refused.status_code == 422 and error_code(refused) == "invalid-request", body
        assert c.get("/v1/scopes/keep:me").status_code == 200


def test_a_scope_with_the_longest_id_can_be_deleted(tmp_path: Path) -> None:
    """``confirm`` takes every scope_id a Scope can have (256 characters), so no Scope is beyond deletion."""
    longest = "s" * 256
    with live_server(tmp_path) as server, httpx.Client(base_url=server.base_url, verify=TLS) as c:
        assert c.post("/v1/scopes", json={"scope_id": longest, "title": "t"}).status_code == 201
        deleted = c.request("DELETE", f"/v1/scopes/{longest}", json={"confirm": longest})
        assert deleted.status_code == 200, deleted.text
        assert c.get(f"/v1/scopes/{longest}").status_code == 404
