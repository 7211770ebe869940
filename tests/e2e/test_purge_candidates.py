"""A purge reaches the review inbox: purging a Source erases the text of every Atomic Memory Candidate extracted
from it (pending, approved or rejected) and a pending one can no longer be approved (``410 purged``, nothing
written); purging an Atomic Memory erases the Candidate that wrote it. Afterwards (SQLite) no database file holds
the text, WAL included; embedded seekdb only its own log and data file (docs/operations.md, "Purge").

Each backend runs in a Server of its own, so the files grepped hold only this test's data.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests import forked
from tests.conftest import live_server
from tests.e2e.test_purge import files_holding
from tests.seekdb_support import new_engine_dir, outside_engine_storage, require_seekdb
from tests.support import Api, error_code, wait_until


def _cli(url: str, *args: str) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    command = [sys.executable, "-m", "powercontext", *args, "--url", url]
    return forked.run(command, capture_output=True, text=True, timeout=60, env=env, check=False)


def _secret(tag: str) -> str:
    return f"zq{tag}plan{uuid.uuid4().hex[:12]}"


def _in_candidate(secret: str) -> str:
    """The text as only a Candidate row holds it (its fields JSON), not the Source nor the memory written from it."""
    return f'"text": "{secret}'


def _candidates(api: Api, scope: str, status: str) -> list[dict[str, Any]]:
    return list(api.get(f"/v1/scopes/{scope}/memory-candidates?status={status}&limit=200").json()["items"])


def _holding(base: Path, needles: list[str], seekdb: bool) -> list[str]:
    found = [path for needle in needles for path in files_holding(base, needle.encode())]
    return outside_engine_storage(found) if seekdb else found


@pytest.mark.parametrize("backend", ["sqlite", "seekdb"])
def test_purges_erase_the_review_inbox_text_and_a_purged_candidate_cannot_be_approved(
    backend: str, tmp_path: Path
) -> None:
    store = None
    if backend == "seekdb":
        require_seekdb()
        store = f"seekdb://{new_engine_dir(tmp_path)}"
    pending, rejected, approved = _secret("pending"), _secret("rejected"), _secret("approved")
    with live_server(tmp_path, store=store) as server:
        api = Api(server.base_url)
        try:
            scope = api.new_scope(prefix="purge-inbox")
            policy = api.put(f"/v1/scopes/{scope}/extraction-policy", {"explicit": "review", "model": "review"})
            assert policy.status_code == 200, policy.text
            source_of: dict[str, str] = {}
            for secret in (pending, rejected, approved):
                content = f"remember: {secret} is the launch codename"
                source_of[secret] = api.post(
                    f"/v1/scopes/{scope}/sources", {"kind": "note", "content": content}
                ).json()["source_id"]
            assert wait_until(lambda: len(_candidates(api, scope, "pending")) == 3, timeout=30)
            candidate_of = {
                secret: next(c for c in _candidates(api, scope, "pending") if c["source_id"] == source_of[secret])
                for secret in source_of
            }
            assert candidate_of[pending]["operation"]["text"] == f"{pending} is the launch codename"
            path = f"/v1/scopes/{scope}/memory-candidates"
            done = api.post(f"{path}/{candidate_of[rejected]['candidate_id']}/reject", {"reason": "not now"})
            assert done.status_code == 200, done.text
            wrote = api.post(f"{path}/{candidate_of[approved]['candidate_id']}/approve", {})
            assert wrote.status_code == 200, wrote.text
            memory_id = wrote.json()["result"]["artifact"]["artifact_id"]

            # Purging the Sources of the pending and the rejected Candidate erases both Candidates' text.
            for secret in (pending, rejected):
                purged = api.post(f"/v1/scopes/{scope}/sources/{source_of[secret]}/purge", {})
                assert purged.status_code == 200, purged.text
            still_pending = _candidates(api, scope, "pending")
            assert [c["candidate_id"] for c in still_pending] == [candidate_of[pending]["candidate_id"]]
            assert still_pending[0]["operation"]["text"] == "[purged]"
            assert [c["operation"]["text"] for c in _candidates(api, scope, "rejected")] == ["[purged]"]
            listed = _cli(server.base_url, "memory", "candidates", "list", "-s", scope)
            assert listed.returncode == 0 and "[purged]" in listed.stdout, listed.stderr
            shown = api.get(f"{path}/{candidate_of[pending]['candidate_id']}").text + listed.stdout
            assert pending not in shown

            # A pending Candidate of a purged Source cannot bring its text back as a memory.
            refused = api.post(f"{path}/{candidate_of[pending]['candidate_id']}/approve", {})
            assert refused.status_code == 410 and error_code(refused) == "purged", refused.text
            by_cli = _cli(
                server.base_url, "memory", "candidates", "approve", candidate_of[pending]["candidate_id"], "-s", scope
            )
            assert by_cli.returncode == 1 and "error: purged:" in by_cli.stderr, by_cli.stdout + by_cli.stderr
            memories = api.get(f"/v1/scopes/{scope}/atomic-memory?state=all&limit=200").json()["items"]
            assert [m["artifact_address"]["artifact"]["artifact_id"] for m in memories] == [memory_id]
            assert _candidates(api, scope, "pending")[0]["status"] == "pending"

            # Purging the memory an approved Candidate wrote erases that Candidate's text too.
            gone = api.post(f"/v1/scopes/{scope}/atomic-memory/{memory_id}/purge", {})
            assert gone.status_code == 200, gone.text
            decided = _candidates(api, scope, "approved")
            assert [c["operation"]["text"] for c in decided] == ["[purged]"]
            assert decided[0]["result"]["artifact"]["artifact_id"] == memory_id
            assert approved not in api.get(f"{path}?status=approved").text

            # No store file holds what was purged (the approved memory's Source stays, and holds the text: purging
            # a memory leaves its Sources as they are; the Candidate's row is what must no longer hold it).
            erased = [pending, rejected, _in_candidate(approved)]
            assert _holding(tmp_path, erased, backend == "seekdb") == []
            assert approved in api.get(f"/v1/scopes/{scope}/sources/{source_of[approved]}").json()["content"]
        finally:
            api.close()
    assert _holding(tmp_path, erased, backend == "seekdb") == []
