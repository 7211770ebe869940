"""``powercontext topic|experience|profile``, run as a user runs them, against the live server subprocess."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from tests.conftest import LiveServer
from tests.e2e.test_cli import run_cli


@pytest.fixture
def scope(server: LiveServer) -> str:
    scope_id = f"cli-fam-{uuid.uuid4().hex[:12]}"
    assert run_cli("scope", "create", scope_id, url=server.base_url).returncode == 0
    return scope_id


def test_help_lists_the_family_commands() -> None:
    result = run_cli("--help")
    for command in ("topic", "experience", "profile"):
        assert command in result.stdout
    sub = run_cli("experience", "candidate", "--help")
    assert sub.returncode == 0 and "review" in sub.stdout


def test_topic_lifecycle_through_the_cli(server: LiveServer, scope: str, tmp_path: Path) -> None:
    url = server.base_url
    body = tmp_path / "body.md"
    body.write_text("We deploy with blue-green switches on Tuesdays.\n", encoding="utf-8")
    created = run_cli(
        "topic", "create", "Deployment pipeline", "-s", scope, "--body-file", str(body), "--tag", "ops", url=url
    )
    assert created.returncode == 0, created.stderr
    aid = created.stdout.split()[0]
    assert aid.startswith("tm_") and "Deployment pipeline" in created.stdout

    revised = run_cli(
        "topic", "revise", aid, "-s", scope, "--expected-revision", "1", "--body", "Canary releases now.", url=url
    )
    assert revised.returncode == 0, revised.stderr
    assert "revision 2" in revised.stdout
    stale = run_cli("topic", "revise", aid, "-s", scope, "--expected-revision", "1", "--title", "x", url=url)
    assert stale.returncode == 4 and "revision-conflict" in stale.stderr

    found = run_cli("topic", "search", "canary release", "-s", scope, url=url)
    assert "mode fts" in found.stdout and f"{aid}@2" in found.stdout
    retired = run_cli("topic", "retire", aid, "-s", scope, "--json", url=url)
    assert json.loads(retired.stdout)["state"] == "retired"
    assert json.loads(run_cli("topic", "search", "canary", "-s", scope, "--json", url=url).stdout)["hits"] == []
    original = run_cli("topic", "get", aid, "-s", scope, "--revision", "1", "--json", url=url)
    assert json.loads(original.stdout)["body"] == "We deploy with blue-green switches on Tuesdays.\n"
    restored = run_cli("topic", "restore", aid, "-s", scope, url=url)
    assert restored.returncode == 0 and "active" in restored.stdout

    nothing = run_cli("topic", "revise", aid, "-s", scope, "--expected-revision", "2", url=url)
    assert nothing.returncode == 1 and nothing.stderr.startswith("error: nothing to change")
    too_long = run_cli("topic", "create", "T", "-s", scope, "--body", "x" * 16001, url=url)
    assert too_long.returncode == 2
    assert too_long.stderr.startswith("error: invalid-request: body:") and "Traceback" not in too_long.stderr


def test_experience_review_through_the_cli(server: LiveServer, scope: str) -> None:
    url = server.base_url
    lesson = ["--situation", "Slow CI builds", "--worked", "Cache deps", "--avoid", "Clean builds", "--tag", "ci"]
    added = run_cli("experience", "candidate", "add", "-s", scope, *lesson, "--json", url=url)
    assert added.returncode == 0, added.stderr
    cid = json.loads(added.stdout)["candidate_id"]
    assert json.loads(run_cli("experience", "search", "builds", "-s", scope, "--json", url=url).stdout)["hits"] == []

    no_cas = run_cli("experience", "candidate", "review", cid, "revise", "-s", scope, "--worked", "x", url=url)
    assert no_cas.returncode == 1 and "--expected-candidate-revision" in no_cas.stderr
    revised = run_cli(
        "experience", "candidate", "review", cid, "revise", "-s", scope, "--expected-candidate-revision", "1",
        "--worked", "Cache dependencies between runs", url=url,
    )  # fmt: skip
    assert revised.returncode == 0, revised.stderr
    assert "candidate revision 2 (pending)" in revised.stdout and "What worked: Cache dependencies" in revised.stdout
    assert "Situation: Slow CI builds" in revised.stdout  # kept

    # Options the decision would ignore are refused before any request; the Candidate stays as it was.
    review = ("experience", "candidate", "review", cid)
    ignored = run_cli(*review, "approve", "-s", scope, "--worked", "Something else", url=url)
    assert ignored.returncode == 1 and "only revise takes --situation, --worked" in ignored.stderr
    stray_reason = run_cli(*review, "approve", "-s", scope, "--reason", "duplicate", url=url)
    assert stray_reason.returncode == 1 and "only reject takes --reason" in stray_reason.stderr
    cas = ("--expected-candidate-revision", "2")
    half_target = run_cli(*review, "revise", "-s", scope, *cas, "--target", "x", url=url)
    assert half_target.returncode == 1 and "--target and --expected-revision go together" in half_target.stderr
    unchanged = run_cli("experience", "candidate", "show", cid, "-s", scope, url=url)
    assert "candidate revision 2 (pending)" in unchanged.stdout
    assert "revise: what worked." in run_cli(*review, "--help").stdout

    approved = run_cli("experience", "candidate", "review", cid, "approve", "-s", scope, "--json", url=url)
    experience = json.loads(approved.stdout)["experience"]
    eid = experience["artifact_address"]["artifact"]["artifact_id"]
    assert experience["what_worked"] == "Cache dependencies between runs"
    shown = run_cli("experience", "candidate", "show", cid, "-s", scope, url=url)
    assert "(approved)" in shown.stdout and f"approved as {eid}@1" in shown.stdout
    again = run_cli("experience", "candidate", "review", cid, "reject", "-s", scope, url=url)
    assert again.returncode == 4 and "candidate-not-pending" in again.stderr

    found = run_cli("experience", "search", "builds", "-s", scope, url=url)
    assert f"{eid}@1" in found.stdout
    got = run_cli("experience", "get", eid, "-s", scope, url=url)
    assert "What to avoid: Clean builds" in got.stdout
    retired = run_cli("experience", "retire", eid, "-s", scope, "--json", url=url)
    assert json.loads(retired.stdout)["state"] == "retired"
    exact = run_cli("experience", "get", eid, "-s", scope, "--revision", "1", "--json", url=url)
    assert json.loads(exact.stdout)["state"] == "retired"
    bad = run_cli("experience", "candidate", "review", cid, "merge", "-s", scope, url=url)
    assert bad.returncode == 1 and "approve, reject, revise" in bad.stderr


def test_profile_through_the_cli(server: LiveServer, scope: str, tmp_path: Path) -> None:
    url = server.base_url
    missing = run_cli("profile", "get", "-s", scope, url=url)
    assert missing.returncode == 3 and missing.stderr.startswith("error: artifact-not-found:")
    first = run_cli("profile", "set", "-s", scope, "language=Python 3.11", "style=ruff, mypy --strict", url=url)
    assert first.returncode == 0, first.stderr
    assert "Profile revision 1" in first.stdout and "mypy --strict" in first.stdout
    stale = run_cli("profile", "set", "-s", scope, "language=Python", url=url)
    assert stale.returncode == 4 and "revision-conflict" in stale.stderr

    source = tmp_path / "profile.json"
    source.write_text(json.dumps({"language": "Python 3.12", "tests": "pytest -q"}), encoding="utf-8")
    second = run_cli(
        "profile", "set", "-s", scope, "--file", str(source), "--expected-revision", "1", "--json", url=url
    )
    assert json.loads(second.stdout)["entries"] == [
        {"key": "language", "value": "Python 3.12"},
        {"key": "tests", "value": "pytest -q"},
    ]
    head = json.loads(run_cli("profile", "get", "-s", scope, "--json", url=url).stdout)
    assert head["head_revision"] == 2
    old = json.loads(run_cli("profile", "get", "-s", scope, "--revision", "1", "--json", url=url).stdout)
    assert old["entries"][0] == {"key": "language", "value": "Python 3.11"}

    source.write_text("[1, 2]", encoding="utf-8")
    wrong = run_cli("profile", "set", "-s", scope, "--file", str(source), "--expected-revision", "2", url=url)
    assert wrong.returncode == 2 and wrong.stderr.startswith("error: invalid-request: --file must hold")
    source.write_text("{not json", encoding="utf-8")
    unreadable = run_cli("profile", "set", "-s", scope, "--file", str(source), url=url)
    assert unreadable.returncode == 2
    assert unreadable.stderr.startswith("error: invalid-request: cannot read --file as JSON")
    not_pair = run_cli("profile", "set", "-s", scope, "no-equals-sign", url=url)
    assert not_pair.returncode == 2
    assert not_pair.stderr.startswith("error: invalid-request: argument 1 is not KEY=VALUE")
    assert "no-equals-sign" not in not_pair.stderr
    duplicate = run_cli("profile", "set", "-s", scope, "--expected-revision", "2", "a=1", "a=2", url=url)
    assert duplicate.returncode == 2 and "invalid-request" in duplicate.stderr and "Traceback" not in duplicate.stderr
