"""Every human view of stored text is terminal-safe; ``--json`` stays exact. Real CLI subprocesses, live server.

A body holding ESC, OSC, BEL, NUL, DEL, a C1 CSI, CR, bidi overrides and tag characters is stored, then shown by
each view a person uses; nothing those characters are made of may reach stdout or stderr raw, and each is shown as
its escape (so a reviewer sees something was there).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.code_support import git, write
from tests.conftest import LiveServer
from tests.e2e.test_cli import run_cli
from tests.e2e.test_eval_cli import run_cli as run_eval_cli
from tests.support import Api

HOSTILE = "deploy \x1b[2J\x1b]0;owned\x07 nul\x00 del\x7f csi\x9b31m cr\rX \u202eevil\u202c tag\U000e0041 end"
# What may never be written raw to a terminal (newline and tab are fine).
RAW_FORBIDDEN = {"\x1b", "\x07", "\x00", "\x7f", "\x9b", "\r", "\u202e", "\u202c", "\U000e0041"}


def assert_terminal_safe(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stderr
    shown = done.stdout + done.stderr
    assert sorted(f"U+{ord(c):04X}" for c in RAW_FORBIDDEN if c in shown) == []


def test_memory_views_escape_controls_and_json_stays_exact(server: LiveServer, api: Api) -> None:
    url = server.base_url
    scope = api.new_scope(prefix="terminal")
    aid = api.add(scope, HOSTILE, kind="fact")["artifact_address"]["artifact"]["artifact_id"]
    for args in (("memory", "search", "deploy"), ("memory", "list"), ("memory", "get", aid)):
        done = run_cli(*args, "-s", scope, url=url)
        assert_terminal_safe(done)
        assert "\\x1b[2J" in done.stdout and "\\x9b31m" in done.stdout and "\\u202eevil" in done.stdout
        assert "\\U000e0041" in done.stdout and "\\x00" in done.stdout and "\\x0dX" in done.stdout
    exact = json.loads(run_cli("memory", "get", aid, "-s", scope, "--json", url=url).stdout)
    assert exact["text"] == HOSTILE


def test_family_views_escape_controls(server: LiveServer, api: Api) -> None:
    url = server.base_url
    scope = api.new_scope(prefix="terminal-fam")
    created = run_cli("topic", "create", "Deploy \u202enotes", "-s", scope, "--body", HOSTILE, url=url)
    assert_terminal_safe(created)
    aid = created.stdout.split()[0]
    assert_terminal_safe(run_cli("topic", "get", aid, "-s", scope, url=url))
    assert_terminal_safe(run_cli("topic", "search", "deploy", "-s", scope, url=url))
    lesson = ["--situation", HOSTILE, "--worked", HOSTILE, "--avoid", "nothing \u2066hidden\u2069"]
    added = run_cli("experience", "candidate", "add", "-s", scope, *lesson, url=url)
    assert_terminal_safe(added)
    assert "\\x1b[2J" in added.stdout and "\\u2066hidden" in added.stdout
    profile = run_cli("profile", "set", "-s", scope, f"motto={HOSTILE}", url=url)
    assert_terminal_safe(profile)


def test_code_views_escape_controls(server: LiveServer, api: Api, tmp_path: Path) -> None:
    url = server.base_url
    scope = api.new_scope(prefix="terminal-code")
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, "src/banner.py", 'def printBannerNow():\n    return "\x1b]0;owned\x07 \x1b[2J \u202eevil"\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    assert run_cli("code", "index", str(repo), "-s", scope, url=url).returncode == 0
    found = run_cli("code", "query", "printBannerNow", "-s", scope, url=url)
    assert_terminal_safe(found)
    assert "\\x1b]0;owned\\x07" in found.stdout
    hit = json.loads(run_cli("code", "query", "printBannerNow", "-s", scope, "--json", url=url).stdout)["hits"][0]
    ev = hit["code_evidence"]
    args = ["code", "snippet", ev["path"], "-s", scope, "--fingerprint", ev["fingerprint"]]
    args += ["--file-sha256", ev["file_sha256"], "--start", str(ev["start_line"]), "--end", str(ev["end_line"])]
    snippet = run_cli(*args, url=url)
    assert_terminal_safe(snippet)
    assert "\\u202eevil" in snippet.stdout
    assert "\x1b[2J" in json.loads(run_cli(*args, "--json", url=url).stdout)["text"]


def test_eval_summary_escapes_a_suites_categories(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    memory = {"id": "m1", "scope_id": "t:x", "kind": "fact", "created": "2025-01-01", "text": "deploy on Tuesdays"}
    category = "kw\x1b]8;;https://evil.example\x07link\x1b]8;;\x07\x1b[2J"
    query = {"id": "q1", "scope_id": "t:x", "query": "deploy", "category": category, "expected": ["m1"], "outdated": []}
    (suite / "memories.jsonl").write_text(json.dumps(memory) + "\n", encoding="utf-8")
    (suite / "queries.jsonl").write_text(json.dumps(query) + "\n", encoding="utf-8")
    done = run_eval_cli("eval", "run", str(suite), "--out", str(tmp_path / "out"), "--mode", "fts")
    assert_terminal_safe(done)
    assert "kw\\x1b]8;;https://evil.example\\x07link" in done.stdout
