"""``powercontext.hosts``: Scope resolution, the bounded query rule, and the strict four-key validator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from powercontext.contract.common import PREPARED_CONTEXT_SCHEMA
from powercontext.hosts.query import MAX_QUERY_CHARS, derive_query
from powercontext.hosts.scope import ScopeConfigError, resolve_scope, scope_from_remote
from powercontext.hosts.validate import InvalidPreparedContext, validate_prepared_context

CONTENT = "héllo ✓ context"


def answer(**changes: object) -> bytes:
    body: dict[str, object] = {
        "schema": PREPARED_CONTEXT_SCHEMA,
        "status": "ready",
        "content": CONTENT,
        "content_bytes": len(CONTENT.encode("utf-8")),
    }
    body.update(changes)
    return json.dumps(body).encode()


def test_validator_accepts_ready_and_empty() -> None:
    ready = validate_prepared_context(answer(), 8000)
    assert ready.content == CONTENT and ready.content_bytes == len(CONTENT.encode())
    empty = validate_prepared_context(answer(status="empty", content=None, content_bytes=0), 8000)
    assert empty.status == "empty" and empty.content is None


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (answer(receipt={}), "extra_key"),
        (json.dumps({"schema": PREPARED_CONTEXT_SCHEMA, "status": "ready", "content": "x"}).encode(), "wrong_keys"),
        (answer(schema="powercontext.prepared-context.v0"), "schema_mismatch"),
        (answer(status="partial"), "status_unknown"),
        (answer(content_bytes=True), "content_bytes_type"),
        (answer(content_bytes=len(CONTENT)), "content_bytes_mismatch"),  # characters, not UTF-8 bytes
        (answer(content=None), "content_type"),
        (answer(status="empty"), "empty_with_content"),
        (b'{"schema":"a","schema":"b","status":"empty","content":null,"content_bytes":0}', "duplicate_key"),
        (b'{"content_bytes": NaN}', "not_json"),
        (b"[]", "not_an_object"),
        (b"\xff\xfe", "not_json"),
    ],
)
def test_validator_rejects(body: bytes, reason: str) -> None:
    with pytest.raises(InvalidPreparedContext) as info:
        validate_prepared_context(body, 8000)
    assert info.value.reason == reason


def test_validator_enforces_the_requested_budget() -> None:
    size = len(CONTENT.encode("utf-8"))
    assert validate_prepared_context(answer(), size).content == CONTENT
    with pytest.raises(InvalidPreparedContext, match="over_budget"):
        validate_prepared_context(answer(), size - 1)


def test_short_prompts_pass_through_with_whitespace_collapsed() -> None:
    assert derive_query("  Why   did we\n\nchoose SQLite? ") == "Why did we choose SQLite?"
    assert derive_query("   \n ") == ""


def test_code_blocks_are_dropped_unless_they_are_all_there_is() -> None:
    prompt = "Fix this:\n```python\nsecret_code_here()\n```\nthanks"
    assert derive_query(prompt) == "Fix this: thanks"
    assert derive_query("```\nonly code\n```") == "``` only code ```"


def test_long_prompts_keep_head_and_tail_within_the_bound() -> None:
    words = " ".join(f"w{i}" for i in range(3000))
    query = derive_query("START " + words + " END")
    assert len(query) <= MAX_QUERY_CHARS
    assert query.startswith("START w0 w1") and query.endswith("w2999 END")
    assert all(token.startswith("w") or token in ("START", "END") for token in query.split())  # no cut words


@pytest.mark.parametrize(
    ("url", "scope"),
    [
        ("git@github.com:Acme/Pay.git", "repo:github.com/acme/pay"),
        ("https://token:x-oauth@github.com/acme/pay.git", "repo:github.com/acme/pay"),
        ("ssh://git@gitlab.example.com:2222/group/sub/proj.git", "repo:gitlab.example.com/group/sub/proj"),
        ("https://github.com/acme/pay/", "repo:github.com/acme/pay"),
        ("/srv/git/pay.git", None),
        ("../pay", None),
    ],
)
def test_scope_from_remote(url: str, scope: str | None) -> None:
    assert scope_from_remote(url) == scope


def test_scope_resolution_order(tmp_path: Path) -> None:
    repo = tmp_path / "payments-service"
    (repo / ".git").mkdir(parents=True)
    deep = repo / "src" / "pkg"
    deep.mkdir(parents=True)
    assert resolve_scope(deep, {}).scope_id == "dir:payments-service"
    (repo / ".git" / "config").write_text('[remote "upstream"]\n\turl = git@h.io:o/r.git\n', encoding="utf-8")
    assert resolve_scope(deep, {}).scope_id == "repo:h.io/o/r"
    (repo / ".git" / "config").write_text(
        '[remote "upstream"]\n\turl = git@h.io:o/r.git\n[remote "origin"]\n\turl = git@h.io:o/main.git\n',
        encoding="utf-8",
    )
    resolution = resolve_scope(deep, {})
    assert (resolution.scope_id, resolution.source) == ("repo:h.io/o/main", "git-remote")
    (repo / ".powercontext.toml").write_text('scope_id = "project:payments"\nmax_bytes = 4000\n', encoding="utf-8")
    resolution = resolve_scope(deep, {})
    assert (resolution.scope_id, resolution.source) == ("project:payments", "config")
    assert resolution.config is not None and resolution.config.max_bytes == 4000
    assert resolve_scope(deep, {"POWERCONTEXT_SCOPE": "explicit:one"}).scope_id == "explicit:one"


def test_a_worktree_reads_the_common_git_config(tmp_path: Path) -> None:
    main_git = tmp_path / "main" / ".git"
    (main_git / "worktrees" / "wt").mkdir(parents=True)
    (main_git / "config").write_text('[remote "origin"]\n\turl = https://h.io/o/r\n', encoding="utf-8")
    (main_git / "worktrees" / "wt" / "commondir").write_text("../..\n", encoding="utf-8")
    worktree = tmp_path / "wt"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {main_git / 'worktrees' / 'wt'}\n", encoding="utf-8")
    assert resolve_scope(worktree, {}).scope_id == "repo:h.io/o/r"


def test_config_above_the_repository_root_is_not_used(tmp_path: Path) -> None:
    (tmp_path / ".powercontext.toml").write_text('scope_id = "outer"\n', encoding="utf-8")
    repo = tmp_path / "inner"
    (repo / ".git").mkdir(parents=True)
    assert resolve_scope(repo, {}).scope_id == "dir:inner"


@pytest.mark.parametrize("text", ['scope_id = ""', "scope_id = 3", "max_bytes = 100", "not toml ["])
def test_bad_config_is_refused(tmp_path: Path, text: str) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".powercontext.toml").write_text(text, encoding="utf-8")
    with pytest.raises(ScopeConfigError):
        resolve_scope(tmp_path, {})
