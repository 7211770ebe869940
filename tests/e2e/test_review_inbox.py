"""The review inbox over HTTP: extracted writes wait for a decision when the policy says so, and an approval
applies exactly what was extracted, with its Source as lineage (on both backends)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import LiveServer, live_server
from tests.seekdb_support import new_engine_dir, require_seekdb
from tests.support import Api, error_code, wait_until


@pytest.fixture(scope="module", params=["sqlite", "seekdb"])
def reviewing_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp(f"review-{request.param}")
    store = None
    if request.param == "seekdb":
        require_seekdb()
        store = f"seekdb://{new_engine_dir(base)}"
    with live_server(base, {"POWERCONTEXT_EXTRACTION_REVIEW": "all"}, store=store) as live:
        yield live


def _cli(*args: str, url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    done = subprocess.run(
        [sys.executable, "-m", "powercontext", *args, "--url", url], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _pending(api: Api, scope_id: str) -> list[dict[str, Any]]:
    return list(api.get(f"/v1/scopes/{scope_id}/memory-candidates").json()["items"])


def test_extracted_writes_wait_for_approval_and_apply_with_lineage(reviewing_server: LiveServer) -> None:
    api = Api(reviewing_server.base_url)
    try:
        scope_id = api.new_scope()
        r = api.post(
            f"/v1/scopes/{scope_id}/sources",
            {"kind": "prompt", "content": "remember: deploys are on Tuesdays\nnever push to main"},
        )
        source_id = r.json()["source_id"]
        assert wait_until(lambda: len(_pending(api, scope_id)) == 2, timeout=20)
        source = api.get(f"/v1/scopes/{scope_id}/sources/{source_id}").json()["extraction"]
        assert (source["status"], source["reason"], source["writes"]) == ("done", "in-review", [])
        assert api.get(f"/v1/scopes/{scope_id}/atomic-memory").json()["items"] == []  # nothing applied yet
        never, deploys = _pending(api, scope_id)  # newest first
        assert deploys["operation"] == {
            "op": "create",
            "text": "deploys are on Tuesdays",
            "kind": "fact",
            "target": None,
            "merged": None,
        }
        assert deploys["source_id"] == source_id and deploys["status"] == "pending"

        approved = api.post(f"/v1/scopes/{scope_id}/memory-candidates/{deploys['candidate_id']}/approve", {}).json()
        assert approved["status"] == "approved" and approved["result"]["artifact"]["revision"] == 1
        memory = api.read_address(approved["result"])
        assert memory["text"] == "deploys are on Tuesdays"
        assert [ref["source_id"] for ref in memory["source_refs"]] == [source_id]
        again = api.post(f"/v1/scopes/{scope_id}/memory-candidates/{deploys['candidate_id']}/approve", {})
        assert again.status_code == 409 and error_code(again) == "candidate-not-pending"

        listed = _cli("memory", "candidates", "list", "-s", scope_id, url=reviewing_server.base_url)
        assert never["candidate_id"] in listed.stdout and "never push to main" in listed.stdout
        _cli(
            "memory",
            "candidates",
            "reject",
            never["candidate_id"],
            "-s",
            scope_id,
            "--reason",
            "not a rule here",
            url=reviewing_server.base_url,
        )
        rejected = api.get(f"/v1/scopes/{scope_id}/memory-candidates/{never['candidate_id']}").json()
        assert (rejected["status"], rejected["reject_reason"], rejected["result"]) == (
            "rejected",
            "not a rule here",
            None,
        )
        assert _pending(api, scope_id) == []
        decided = api.get(f"/v1/scopes/{scope_id}/memory-candidates?status=approved").json()["items"]
        assert [c["candidate_id"] for c in decided] == [deploys["candidate_id"]]
        assert api.get(f"/v1/scopes/{scope_id}/sources/{source_id}").json()["extraction"]["writes"] == [
            approved["result"]
        ]
        unknown = api.get(f"/v1/scopes/{scope_id}/memory-candidates/mc_nothing")
        assert unknown.status_code == 404 and error_code(unknown) == "candidate-not-found"
    finally:
        api.close()


def test_a_scope_policy_overrides_the_servers(reviewing_server: LiveServer) -> None:
    api = Api(reviewing_server.base_url)
    try:
        scope_id = api.new_scope()
        path = f"/v1/scopes/{scope_id}/extraction-policy"
        assert api.get(path).json() == {"explicit": "review", "model": "review", "origin": "server"}
        r = api.put(path, {"explicit": "apply", "model": "review"})
        assert r.status_code == 200 and r.json()["origin"] == "scope"
        assert api.get(path).json() == {"explicit": "apply", "model": "review", "origin": "scope"}
        bad = api.put(path, {"explicit": "later", "model": "review"})
        assert bad.status_code == 422
        source_id = api.post(
            f"/v1/scopes/{scope_id}/sources", {"kind": "note", "content": "note: the staging database is pg-2"}
        ).json()["source_id"]

        def writes() -> list[Any]:
            return list(api.get(f"/v1/scopes/{scope_id}/sources/{source_id}").json()["extraction"]["writes"])

        assert wait_until(lambda: len(writes()) == 1, timeout=20)  # applied at once: this Scope's policy
        assert _pending(api, scope_id) == []
    finally:
        api.close()
