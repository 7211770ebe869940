"""Real deletion of an Atomic Memory: the text of every revision is erased, an exact read answers ``410 purged``,
search, prepare and lists never show it, and (SQLite) no database file — WAL included — holds it afterwards.

Each backend runs in a Server of its own, so the files grepped hold only this test's data.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import forked
from tests.conftest import live_server
from tests.seekdb_support import new_engine_dir, outside_engine_storage, require_seekdb
from tests.support import Api, error_code

SECRET = "sk-live-Q7W8E9R0T1Y2U3zebracrossing"
SECRET_TERM = b"q7w8e9r0t1y2u3zebracrossing"  # the token as the full-text index stores it


def cli(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    return forked.run(
        [sys.executable, "-m", "powercontext", *args, "--url", url],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )  # fmt: skip


def files_holding(directory: Path, needle: bytes) -> list[str]:
    found = []
    for path in sorted(directory.rglob("*")):
        if path.is_file() and needle in path.read_bytes():
            found.append(str(path.relative_to(directory)))
    return found


def purge_flow(api: Api, url: str) -> tuple[str, str]:
    scope = api.new_scope(prefix="purge")
    for i in range(30):
        api.add(scope, f"Filler note {i} about the deploy checklist", kind="note")
    created = api.add(scope, f"The deploy token is {SECRET}", kind="fact")
    aid = created["artifact_address"]["artifact"]["artifact_id"]
    revised = api.put(f"/v1/scopes/{scope}/atomic-memory/{aid}", {"expected_revision": 1, "text": f"Token {SECRET} x"})
    assert revised.status_code == 200, revised.text
    assert SECRET in api.prepare(scope, "deploy token", max_bytes=8000).json()["content"]

    refused = cli(url, "memory", "purge", aid, "-s", scope)  # no --yes, no terminal: refused, nothing sent
    assert refused.returncode == 2 and "without --yes" in refused.stderr
    assert api.head(scope, aid).status_code == 200
    done = cli(url, "memory", "purge", aid, "-s", scope, "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) | {"purged_at": None} == {
        "status": "purged", "scope_id": scope, "family": "atomic-memory", "artifact_id": aid, "revisions": 2,
        "purged_at": None,
    }  # fmt: skip
    return scope, aid


def assert_gone(api: Api, scope: str, aid: str) -> None:
    for response in (
        api.head(scope, aid),
        api.revision(scope, aid, 1),
        api.revision(scope, aid, 2),
        api.lifecycle(scope, aid, "restore"),
        api.put(f"/v1/scopes/{scope}/atomic-memory/{aid}", {"expected_revision": 2, "text": "back"}),
    ):
        assert response.status_code == 410 and error_code(response) == "purged", response.text
    again = api.post(f"/v1/scopes/{scope}/atomic-memory/{aid}/purge", {})
    assert again.status_code == 200 and again.json()["revisions"] == 2
    assert SECRET not in api.search(scope, SECRET).text
    assert SECRET not in api.search(scope, "deploy token").text
    assert SECRET not in api.prepare(scope, "deploy token", max_bytes=32768).text
    listed = api.get(f"/v1/scopes/{scope}/atomic-memory?state=all&limit=200").json()["items"]
    assert aid not in {m["artifact_address"]["artifact"]["artifact_id"] for m in listed} and len(listed) == 30


def test_purge_on_sqlite_leaves_the_text_in_no_database_file(tmp_path: Path) -> None:
    with live_server(tmp_path) as server:
        api = Api(server.base_url)
        scope, aid = purge_flow(api, server.base_url)
        assert_gone(api, scope, aid)
        # While the Server runs (its WAL in use): the database, its WAL and shared memory hold neither form.
        assert files_holding(tmp_path, SECRET.encode()) == []
        assert files_holding(tmp_path, SECRET_TERM) == []
        api.close()
    assert files_holding(tmp_path, SECRET.encode()) == [] and files_holding(tmp_path, SECRET_TERM) == []


def test_purge_on_embedded_seekdb_answers_410_and_leaves_the_text_only_in_the_engines_storage(tmp_path: Path) -> None:
    require_seekdb()
    with live_server(tmp_path, store=f"seekdb://{new_engine_dir(tmp_path)}") as server:
        api = Api(server.base_url)
        scope, aid = purge_flow(api, server.base_url)
        assert_gone(api, scope, aid)
        api.close()
    holding = files_holding(tmp_path, SECRET.encode()) + files_holding(tmp_path, SECRET_TERM)
    assert outside_engine_storage(holding) == [], holding


def test_purge_a_topic_memory_and_an_experience_on_sqlite(tmp_path: Path) -> None:
    """Topic Memory and Experience purge the same way; an Experience's Candidate shows ``[purged]``."""
    with live_server(tmp_path) as server:
        api = Api(server.base_url)
        scope = api.new_scope(prefix="purge-fam")
        topic = api.post(f"/v1/scopes/{scope}/topic-memory", {"title": "Deploy keys", "body": f"key {SECRET}"})
        tid = topic.json()["artifact_address"]["artifact"]["artifact_id"]
        revised = api.put(f"/v1/scopes/{scope}/topic-memory/{tid}", {"expected_revision": 1, "body": f"{SECRET} 2"})
        assert revised.status_code == 200, revised.text
        lesson = {"situation": "deploy token leaked", "what_worked": f"rotate {SECRET}", "what_to_avoid": "pasting"}
        cid = api.post(f"/v1/scopes/{scope}/experience/candidates", lesson).json()["candidate_id"]
        approved = api.post(f"/v1/scopes/{scope}/experience/candidates/{cid}/review", {"decision": "approve"})
        eid = approved.json()["experience"]["artifact_address"]["artifact"]["artifact_id"]

        for family, aid, revisions in (("topic-memory", tid, 2), ("experience", eid, 1)):
            done = api.post(f"/v1/scopes/{scope}/{family}/{aid}/purge", {})
            assert done.status_code == 200 and done.json()["revisions"] == revisions, done.text
            for path in (f"{family}/{aid}", f"{family}/{aid}/revisions/1"):
                read = api.get(f"/v1/scopes/{scope}/artifacts/{path}")
                assert read.status_code == 410 and error_code(read) == "purged", read.text
        assert api.post(f"/v1/scopes/{scope}/topic-memory/search", {"query": "deploy keys"}).json()["hits"] == []
        assert api.post(f"/v1/scopes/{scope}/experience/search", {"query": "deploy token"}).json()["hits"] == []
        candidate = api.get(f"/v1/scopes/{scope}/experience/candidates/{cid}").json()
        assert candidate["what_worked"] == "[purged]" and SECRET not in json.dumps(candidate)
        assert SECRET not in api.prepare(scope, "deploy token keys", max_bytes=32768).text
        assert files_holding(tmp_path, SECRET.encode()) == [] and files_holding(tmp_path, SECRET_TERM) == []
        api.close()


def test_store_copy_does_not_bring_a_purged_memory_back(tmp_path: Path) -> None:
    from powercontext.store.base import NewMemory
    from powercontext.store.errors import ArtifactPurged
    from powercontext.store.sqlite import SqliteStore

    source = SqliteStore(tmp_path / "source.db")
    source.create_scope("copy:s", "t", [])
    kept, doomed = source.create_memories(
        "copy:s", [NewMemory("the deploy checklist stays", "note", ()), NewMemory(f"deploy token {SECRET}", "fact", ())]
    )
    source.purge_memory("copy:s", doomed.key.artifact_id)
    source.close()
    copied = cli_copy(tmp_path / "source.db", tmp_path / "copy" / "copy.db")
    assert copied.returncode == 0, copied.stderr
    destination = SqliteStore(tmp_path / "copy" / "copy.db")
    with pytest.raises(ArtifactPurged):
        destination.read_head("copy:s", doomed.key.artifact_id)
    assert destination.read_head("copy:s", kept.key.artifact_id).text == "the deploy checklist stays"
    assert [h.record.key for h in destination.search_text("copy:s", ["deploy", "token"], 10)] == [kept.key]
    destination.close()
    assert (
        files_holding(tmp_path / "copy", SECRET.encode()) == [] and files_holding(tmp_path / "copy", SECRET_TERM) == []
    )


def cli_copy(source: Path, target: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    command = [sys.executable, "-m", "powercontext", "store", "copy", "--from", f"sqlite://{source}"]
    return forked.run([*command, "--to", f"sqlite://{target}"], env=env, timeout=300)
