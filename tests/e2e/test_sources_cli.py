"""``powercontext source list|show|purge``: the real CLI against the session's real Server on loopback.

Sources are captured over HTTP (as a host's hook captures them); what a person then sees and erases goes
through the CLI as a shell runs it.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from typing import Any

from tests.conftest import REPO_ROOT, LiveServer
from tests.e2e.test_cli import run_cli
from tests.support import Api, unique, wait_until

# Controls and bidi a captured prompt may carry: none may reach the terminal raw.
HOSTILE = "ship it \x1b[2J\x1b]0;owned\x07 nul\x00 csi\x9b31m cr\rX \u202eevil\u202c tag\U000e0041 end"
RAW_FORBIDDEN = {"\x1b", "\x07", "\x00", "\x9b", "\r", "\u202e", "\u202c", "\U000e0041"}


def capture(api: Api, scope: str, content: str, kind: str = "prompt", **extra: Any) -> str:
    r = api.post(f"/v1/scopes/{scope}/sources", {"kind": kind, "content": content, **extra})
    assert r.status_code == 201, r.text
    return str(r.json()["source_id"])


def extraction(api: Api, scope: str, source_id: str) -> dict[str, Any]:
    r = api.get(f"/v1/scopes/{scope}/sources/{source_id}")
    assert r.status_code == 200, r.text
    found: dict[str, Any] = r.json()["extraction"]
    return found


def test_list_pages_newest_first_with_a_cursor(server: LiveServer, api: Api) -> None:
    url = server.base_url
    scope = api.new_scope(prefix="src-cli")
    origin = {"host": "claude-code", "session_id": "sess-7", "turn": 2}
    older = capture(api, scope, "can you look at the failing build?", origin=origin)
    newer = capture(api, scope, "the agent's answer", kind="reply")

    listed = run_cli("source", "list", "-s", scope, url=url)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert [line.split()[0] for line in lines] == [newer, older]
    assert "  reply  " in lines[0] and "  prompt  " in lines[1]
    assert "[claude-code, session sess-7, turn 2]" in lines[1]
    assert "failing build" not in listed.stdout  # a list never shows content
    assert "more:" not in listed.stderr

    first = run_cli("source", "list", "-s", scope, "--limit", "1", url=url)
    assert first.returncode == 0, first.stderr
    assert first.stdout.split()[0] == newer
    cursor = first.stderr.strip().removeprefix("more: --cursor ")
    assert cursor.isdigit(), first.stderr
    second = run_cli("source", "list", "-s", scope, "--limit", "1", "--cursor", cursor, url=url)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split()[0] == older and "more:" not in second.stderr

    as_json = run_cli("source", "list", "-s", scope, "--json", url=url)
    assert json.loads(as_json.stdout) == api.get(f"/v1/scopes/{scope}/sources").json()
    empty = run_cli("source", "list", "-s", api.new_scope(prefix="src-empty"), url=url)
    assert empty.returncode == 0 and "no Sources in" in empty.stdout


def test_show_escapes_the_captured_text_and_json_stays_exact(server: LiveServer, api: Api) -> None:
    url = server.base_url
    scope = api.new_scope(prefix="src-show")
    source_id = capture(api, scope, HOSTILE, origin={"host": "codex", "turn": 4})

    shown = run_cli("source", "show", source_id, "-s", scope, url=url)
    assert shown.returncode == 0, shown.stderr
    printed = shown.stdout + shown.stderr
    assert sorted(f"U+{ord(c):04X}" for c in RAW_FORBIDDEN if c in printed) == []
    assert "\\x1b[2J" in shown.stdout and "\\x1b]0;owned\\x07" in shown.stdout and "\\u202eevil" in shown.stdout
    assert "\\x9b31m" in shown.stdout and "\\U000e0041" in shown.stdout and "\\x0dX" in shown.stdout
    assert shown.stdout.startswith(f"{source_id} (prompt, observed ")
    assert "origin: codex, turn 4" in shown.stdout and "sha256: " in shown.stdout

    exact = json.loads(run_cli("source", "show", source_id, "-s", scope, "--json", url=url).stdout)
    assert exact["content"] == HOSTILE and exact["source_id"] == source_id


def test_show_names_the_candidates_extracted_from_the_source(server: LiveServer, api: Api) -> None:
    url = server.base_url
    scope = api.new_scope(prefix="src-cand")
    r = api.put(f"/v1/scopes/{scope}/extraction-policy", {"explicit": "review", "model": "review"})
    assert r.status_code == 200, r.text
    source_id = capture(api, scope, "remember: deploys are on Tuesdays")
    other = capture(api, scope, "remember: the cutoff is 23:00 UTC")

    def pending() -> list[dict[str, Any]]:
        return list(api.get(f"/v1/scopes/{scope}/memory-candidates").json()["items"])

    assert wait_until(lambda: len(pending()) == 2, timeout=20)
    (mine,) = [c for c in pending() if c["source_id"] == source_id]
    assert extraction(api, scope, other)["reason"] == "in-review"

    shown = run_cli("source", "show", source_id, "-s", scope, url=url)
    assert shown.returncode == 0, shown.stderr
    assert "extraction: done (in-review)" in shown.stdout
    assert "candidates extracted from it (1):" in shown.stdout
    assert f"{mine['candidate_id']}  pending  create: deploys are on Tuesdays  (source {source_id})" in shown.stdout
    assert "23:00" not in shown.stdout  # the other Source's Candidate is not this one's


def test_purge_with_yes_then_show_says_it_was_purged(server: LiveServer, api: Api) -> None:
    url = server.base_url
    scope = api.new_scope(prefix="src-purge")
    source_id = capture(api, scope, "remember: the vendor contract is VC-2291")
    assert wait_until(lambda: extraction(api, scope, source_id)["status"] == "done", timeout=20)
    (written,) = extraction(api, scope, source_id)["writes"]
    memory = f"{written['artifact']['artifact_id']}@{written['artifact']['revision']}"

    purged = run_cli("source", "purge", source_id, "-s", scope, "--yes", url=url)
    assert purged.returncode == 0, purged.stderr
    assert f"purged source {source_id} from {scope}" in purged.stdout
    assert f"the memories it wrote stay: {memory}" in purged.stdout

    gone = api.get(f"/v1/scopes/{scope}/sources/{source_id}")
    assert gone.status_code == 410
    shown = run_cli("source", "show", source_id, "-s", scope, url=url)
    assert shown.returncode == 1 and shown.stdout == ""
    assert shown.stderr.strip() == "error: purged: this Source was purged: its content was erased and cannot be read"
    listed = run_cli("source", "list", "-s", scope, url=url)
    assert "done (purged)" in listed.stdout

    again = run_cli("source", "purge", source_id, "-s", scope, "--yes", "--json", url=url)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["extraction"]["reason"] == "purged"


def test_purge_without_yes_off_a_terminal_refuses_and_sends_nothing(server: LiveServer, api: Api) -> None:
    url = server.base_url
    scope = api.new_scope(prefix="src-refuse")
    source_id = capture(api, scope, "keep this one")

    refused = run_cli("source", "purge", source_id, "-s", scope, url=url)
    assert refused.returncode == 2, refused.stderr
    assert "refusing to purge source" in refused.stderr and "without --yes" in refused.stderr
    assert refused.stdout == ""
    r = api.get(f"/v1/scopes/{scope}/sources/{source_id}")
    assert r.status_code == 200 and r.json()["content"] == "keep this one"


def purge_at_a_terminal(url: str, scope: str, source_id: str, answer: str) -> tuple[int, str]:
    """``source purge`` without --yes, its stdin a terminal that types ``answer``: (exit code, what it printed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    main, child = pty.openpty()
    try:
        os.write(main, answer.encode() + b"\n")  # typed ahead: the terminal holds the line until it is read
        done = subprocess.run(
            [sys.executable, "-m", "powercontext", "source", "purge", source_id, "-s", scope, "--url", url],
            stdin=child, capture_output=True, text=True, env=env, cwd=str(REPO_ROOT), timeout=60, check=False,
        )  # fmt: skip
        return done.returncode, done.stdout + done.stderr
    finally:
        os.close(main)
        os.close(child)


def test_purge_at_a_terminal_asks_first(server: LiveServer, api: Api) -> None:
    url = server.base_url
    scope = api.new_scope(prefix="src-tty")
    source_id = capture(api, scope, "ask before erasing me")

    code, printed = purge_at_a_terminal(url, scope, source_id, "n")
    assert code == 1 and "Go on?" in printed, printed
    assert api.get(f"/v1/scopes/{scope}/sources/{source_id}").status_code == 200

    code, printed = purge_at_a_terminal(url, scope, source_id, "y")
    assert code == 0 and f"purged source {source_id}" in printed, printed
    assert api.get(f"/v1/scopes/{scope}/sources/{source_id}").status_code == 410


def test_unknown_id_and_wrong_scope_are_told_clearly(server: LiveServer, api: Api) -> None:
    url = server.base_url
    scope = api.new_scope(prefix="src-where")
    elsewhere = api.new_scope(prefix="src-else")
    source_id = capture(api, scope, "captured in the first Scope")

    for args in (("show", "src_nothing", "-s", scope), ("show", source_id, "-s", elsewhere)):
        missing = run_cli("source", *args, url=url)
        assert missing.returncode == 3, missing.stderr
        assert missing.stderr.strip() == "error: source-not-found: no Source with this id exists in this Scope"
    wrong = run_cli("source", "purge", source_id, "-s", elsewhere, "--yes", url=url)
    assert wrong.returncode == 3 and "source-not-found" in wrong.stderr
    assert api.get(f"/v1/scopes/{scope}/sources/{source_id}").status_code == 200  # not purged from its own Scope

    no_scope = unique("src-none")
    for absent_args in (("list", "-s", no_scope), ("show", source_id, "-s", no_scope)):
        absent = run_cli("source", *absent_args, url=url)
        assert absent.returncode == 3 and absent.stderr.startswith("error: scope-not-found: "), absent.stderr
    bad_cursor = run_cli("source", "list", "-s", scope, "--cursor", "abc", url=url)
    assert bad_cursor.returncode == 2 and "invalid-request" in bad_cursor.stderr
