"""The Claude Code and Codex ``UserPromptSubmit`` hook, run as each host runs it: a subprocess fed the
host's hook JSON, against a real Server (injects) and a misbehaving one (injects nothing, exits 0)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT, LiveServer
from tests.support import Api, free_port, unique, wait_until

HOOK = [sys.executable, "-m", "powercontext.hosts.hook"]
BUDGET_MS = 800


def hook_input(host: str, prompt: str, cwd: Path) -> dict[str, Any]:
    """The fields each host documents for UserPromptSubmit (extra fields are ignored by the hook)."""
    common = {"session_id": "s-1", "cwd": str(cwd), "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    if host == "codex":
        return {**common, "turn_id": "t-1", "model": "gpt", "transcript_path": None}
    return {**common, "transcript_path": str(cwd / "transcript.jsonl"), "permission_mode": "default"}


def run_hook(
    host: str, prompt: str, cwd: Path, url: str, state: Path, extra_env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env.update(
        POWERCONTEXT_URL=url,
        POWERCONTEXT_HOOK_TIMEOUT_MS=str(BUDGET_MS),
        POWERCONTEXT_HOOK_STATE_DIR=str(state),
        POWERCONTEXT_HOOK_QUIET="1",  # the once-per-session notice has its own tests below
    )
    env.update(extra_env or {})
    started = time.monotonic()
    done = subprocess.run(
        [*HOOK, host],
        input=json.dumps(hook_input(host, prompt, cwd)),
        capture_output=True,
        text=True,
        env=env,
        cwd=str(REPO_ROOT),
        timeout=30,
    )
    return done, time.monotonic() - started


def make_repo(base: Path, scope_id: str | None) -> Path:
    repo = base / unique("repo")
    (repo / ".git").mkdir(parents=True)
    (repo / "src").mkdir()
    if scope_id is not None:
        (repo / ".powercontext.toml").write_text(f'scope_id = "{scope_id}"\n', encoding="utf-8")
    return repo


@pytest.fixture(scope="module")
def fake_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    base = tmp_path_factory.mktemp("fake")
    record = base / "requests.jsonl"
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(REPO_ROOT / "tests" / "fake_prepare_server.py"), str(port), str(record)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == b"ready"
        yield f"http://127.0.0.1:{port}", record
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.parametrize("host", ["claude-code", "codex"])
def test_hook_injects_the_servers_content_on_ready(host: str, server: LiveServer, api: Api, tmp_path: Path) -> None:
    scope_id = api.new_scope(prefix="hook")
    api.add(scope_id, "The settlement batch runs nightly at 02:00 UTC", kind="fact")
    repo = make_repo(tmp_path, scope_id)
    prompt = "When does the settlement batch run?"
    done, _ = run_hook(host, prompt, repo / "src", server.base_url, tmp_path / "state")
    assert done.returncode == 0
    assert done.stderr == ""
    out = json.loads(done.stdout)
    assert set(out) == {"hookSpecificOutput"}
    assert out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    # Exactly the content the Server prepares for the same plain request.
    direct = api.prepare(scope_id, prompt, max_bytes=8000).json()
    assert direct["status"] == "ready"
    assert out["hookSpecificOutput"]["additionalContext"] == direct["content"]
    assert "02:00 UTC" in out["hookSpecificOutput"]["additionalContext"]
    state = json.loads((tmp_path / "state" / "last-hook-outcome.json").read_text())
    assert state["outcome"] == "injected" and state["host"] == host


def test_hook_on_empty_scope_injects_nothing(server: LiveServer, api: Api, tmp_path: Path) -> None:
    scope_id = api.new_scope(prefix="hook-empty")
    done, _ = run_hook("claude-code", "anything at all", make_repo(tmp_path, scope_id), server.base_url, tmp_path)
    assert done.returncode == 0 and done.stdout == ""
    line = json.loads(done.stderr)
    assert line["outcome"] == "empty" and line["context_status"] == "empty"


@pytest.mark.parametrize(
    ("mode", "outcome", "reason"),
    [
        ("five_keys", "invalid_response", "extra_key"),
        ("wrong_schema", "invalid_response", "schema_mismatch"),
        ("wrong_bytes", "invalid_response", "content_bytes_mismatch"),
        ("over_budget", "invalid_response", "over_budget"),
        ("http_500", "server_unavailable", "http_5xx"),
        ("non_json", "invalid_response", "not_json"),
        ("oversized", "invalid_response", "too_large"),
        ("redirect", "invalid_response", "redirect"),
        ("slow", "server_unavailable", "timeout"),
        ("old_server", "version_mismatch", "no_prepare_route"),
    ],
)
@pytest.mark.parametrize("host", ["claude-code", "codex"])
@pytest.mark.timed
def test_hook_fails_open_on_a_bad_answer(
    host: str, mode: str, outcome: str, reason: str, fake_server: tuple[str, Path], tmp_path: Path
) -> None:
    url, _ = fake_server
    repo = make_repo(tmp_path, "project:x")
    extra = {"POWERCONTEXT_HOOK_MAX_BYTES": "512"}
    done, elapsed = run_hook(host, "a question", repo, f"{url}/{mode}", tmp_path, extra)
    assert done.returncode == 0
    assert done.stdout == "", "nothing may be injected"
    lines = done.stderr.splitlines()
    assert len(lines) == 1
    line = json.loads(lines[0])
    assert (line["outcome"], line["reason"]) == (outcome, reason)
    assert line["event"] == "context_prepare"
    assert "a question" not in done.stderr and "project:x" not in done.stderr
    # Process start to exit stays within the budget plus interpreter start-up.
    assert elapsed < BUDGET_MS / 1000 + 3.0  # + interpreter start-up on a loaded machine


@pytest.mark.timed
def test_hook_reads_a_chunked_answer_without_waiting_for_the_connection_to_close(
    fake_server: tuple[str, Path], tmp_path: Path
) -> None:
    url, _ = fake_server
    done, elapsed = run_hook("claude-code", "q", make_repo(tmp_path, "p"), f"{url}/chunked", tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"] == "fake prepared context"
    assert elapsed < 2.5  # the server holds the connection open for 3 s after the last chunk


@pytest.mark.timed
def test_hook_fails_open_when_the_server_is_down(tmp_path: Path) -> None:
    done, elapsed = run_hook("codex", "question", make_repo(tmp_path, "p"), f"http://127.0.0.1:{free_port()}", tmp_path)
    assert done.returncode == 0 and done.stdout == ""
    assert json.loads(done.stderr)["outcome"] == "server_unavailable"
    assert elapsed < BUDGET_MS / 1000 + 3.0  # + interpreter start-up on a loaded machine


def test_hook_sends_the_plain_request_with_a_bounded_query(fake_server: tuple[str, Path], tmp_path: Path) -> None:
    url, record = fake_server
    record.unlink(missing_ok=True)
    ask = "How do we retry failed settlement payouts?"
    pasted = "```\n" + "Traceback line that is long\n" * 400 + "```\n"
    prompt = ask + "\n\n" + pasted + "boilerplate words " * 300 + "Please answer briefly."
    repo = make_repo(tmp_path, "project:bounded")
    done, _ = run_hook("claude-code", prompt, repo, f"{url}/record", tmp_path)
    assert done.returncode == 0
    assert json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"] == "fake prepared context"
    sent = json.loads(record.read_text().splitlines()[-1])
    assert set(sent) == {"scope_id", "query", "max_bytes"}
    assert sent["scope_id"] == "project:bounded" and sent["max_bytes"] == 8000
    assert len(sent["query"]) <= 1000
    assert sent["query"].startswith(ask) and sent["query"].endswith("Please answer briefly.")
    assert "Traceback" not in sent["query"]


def test_hook_derives_the_scope_from_the_git_remote_without_credentials(
    fake_server: tuple[str, Path], tmp_path: Path
) -> None:
    url, record = fake_server
    record.unlink(missing_ok=True)
    repo = make_repo(tmp_path, None)
    (repo / ".git" / "config").write_text(
        '[core]\n\tbare = false\n[remote "origin"]\n\turl = https://ci-bot:s3cr3t@GitHub.com:443/Acme/Payments.git\n',
        encoding="utf-8",
    )
    done, _ = run_hook("codex", "q", repo / "src", f"{url}/record", tmp_path)
    assert done.returncode == 0
    sent = json.loads(record.read_text().splitlines()[-1])
    assert sent["scope_id"] == "repo:github.com/acme/payments"


def test_diagnostics_mode_logs_only_receipt_identity_locally(server: LiveServer, api: Api, tmp_path: Path) -> None:
    scope_id = api.new_scope(prefix="hook-diag")
    api.add(scope_id, "Marker zebra-lantern decision about caching", kind="decision")
    repo = make_repo(tmp_path, scope_id)
    state = tmp_path / "state"
    done, _ = run_hook(
        "claude-code", "zebra-lantern caching", repo, server.base_url, state, {"POWERCONTEXT_HOOK_DIAGNOSTICS": "1"}
    )
    assert done.returncode == 0
    injected = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert injected == api.prepare(scope_id, "zebra-lantern caching", max_bytes=8000).json()["content"]
    lines = (state / "hook-diagnostics.jsonl").read_text().splitlines()
    assert len(lines) == 1
    diag = json.loads(lines[0])
    assert diag["outcome"] == "receipt" and diag["status"] == "ready"
    assert set(diag) == {
        "time",
        "host",
        "outcome",
        "receipt_id",
        "content_digest",
        "status",
        "content_bytes",
        "selected_count",
        "omitted",
    }
    assert diag["content_digest"].startswith("sha256:")
    text = lines[0]
    assert "zebra" not in text and scope_id not in text
    # The receipt id is the request id of a real diagnostic request: the Server logged it.
    assert wait_until(lambda: diag["receipt_id"] in server.log_text(), timeout=5)


def test_hook_never_sends_include_receipt_even_in_diagnostics_mode(
    fake_server: tuple[str, Path], tmp_path: Path
) -> None:
    url, record = fake_server
    record.unlink(missing_ok=True)
    done, _ = run_hook(
        "codex", "q", make_repo(tmp_path, "p"), f"{url}/record", tmp_path, {"POWERCONTEXT_HOOK_DIAGNOSTICS": "1"}
    )
    assert done.returncode == 0 and done.stdout
    bodies = [json.loads(line) for line in record.read_text().splitlines()]
    # First the automatic call (plain), then the separate diagnostic call.
    assert "include_receipt" not in bodies[0]
    assert bodies[1]["include_receipt"] is True


def test_hook_ignores_garbage_input(tmp_path: Path) -> None:
    done = subprocess.run(
        [*HOOK, "claude-code"],
        input="not json",
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "POWERCONTEXT_HOOK_STATE_DIR": str(tmp_path)},
    )
    assert done.returncode == 0 and done.stdout == ""
    assert json.loads(done.stderr)["outcome"] == "skipped"


DOCUMENTED_KEYS = {"component", "event", "outcome", "reason", "http_status", "context_status", "content_bytes"}


def documented_line(stderr: str, host: str) -> dict[str, Any]:
    """The one stderr line every failure writes, in the documented shape (CONTRACTS §2.8)."""
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    line = json.loads(lines[0])
    assert set(line) - {"error_code"} == DOCUMENTED_KEYS, line
    assert line["component"] == f"powercontext.{host.replace('-', '_')}.recall" and line["event"] == "context_prepare"
    assert isinstance(line, dict)
    return line


@pytest.mark.parametrize("host", ["claude-code", "codex"])
def test_hostile_stdin_gets_the_documented_line_and_never_raises(host: str, tmp_path: Path) -> None:
    lone_surrogate = '{"prompt": "half a pair \\ud800 here", "cwd": "/", "session_id": "s"}'  # JSON, not text
    for stdin in ("[" * 100_000, '{"prompt": ' * 50_000, "\udcff not utf-8", "[1, 2]", "", lone_surrogate):
        done = subprocess.run(
            [*HOOK, host],
            input=stdin.encode("utf-8", "surrogateescape"),
            capture_output=True,
            timeout=30,
            env={**os.environ, "POWERCONTEXT_HOOK_STATE_DIR": str(tmp_path)},
        )
        assert done.returncode == 0 and done.stdout == b""
        line = documented_line(done.stderr.decode(), host)
        assert (line["outcome"], line["reason"]) == ("skipped", "bad_input"), stdin[:20]


@pytest.mark.parametrize("args", [[], ["stop"]])
def test_a_host_that_keeps_stdin_open_does_not_hold_the_hook_past_its_budget(args: list[str], tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env.update(POWERCONTEXT_HOOK_TIMEOUT_MS="300", POWERCONTEXT_HOOK_STATE_DIR=str(tmp_path))
    hook = subprocess.Popen(
        [*HOOK, "claude-code", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=str(REPO_ROOT),
    )
    assert hook.stdin is not None and hook.stdout is not None and hook.stderr is not None
    try:
        hook.stdin.write(b'{"prompt": "the host writes this and never closes stdin", ')
        hook.stdin.flush()
        status = hook.wait(timeout=8)  # without a bound of its own, the hook waits for EOF (TimeoutExpired)
        out, err = hook.stdout.read(), hook.stderr.read()
    finally:
        hook.kill()
        hook.wait()
        hook.stdin.close()
    assert status == 0 and out == b""
    if not args:
        line = documented_line(err.decode(), "claude-code")
        assert (line["outcome"], line["reason"]) == ("skipped", "input_timeout")


@pytest.mark.parametrize(("mode", "reason"), [("surrogate", "not_utf8"), ("deep", "not_json")])
def test_hostile_server_content_gets_the_documented_line(
    mode: str, reason: str, fake_server: tuple[str, Path], tmp_path: Path
) -> None:
    url, _ = fake_server
    done, _ = run_hook("claude-code", "a question", make_repo(tmp_path, "p"), f"{url}/{mode}", tmp_path)
    assert done.returncode == 0 and done.stdout == ""
    line = documented_line(done.stderr, "claude-code")
    assert (line["outcome"], line["reason"]) == ("invalid_response", reason)


def notice_of(stdout: str) -> str | None:
    if not stdout:
        return None
    out = json.loads(stdout)
    assert set(out) == {"systemMessage"}, out  # for the user only: nothing for the model's context
    assert isinstance(out["systemMessage"], str)
    return out["systemMessage"]


def test_recall_down_is_shown_once_per_session(tmp_path: Path) -> None:
    repo = make_repo(tmp_path, "project:secret-scope")
    down = f"http://127.0.0.1:{free_port()}"
    loud = {"POWERCONTEXT_HOOK_QUIET": ""}

    def prompt(session: str, extra: dict[str, str] | None = None) -> str | None:
        payload = {**hook_input("claude-code", "my private question", repo), "session_id": session}
        env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
        env.update(POWERCONTEXT_URL=down, POWERCONTEXT_HOOK_STATE_DIR=str(tmp_path / "state"), **(extra or loud))
        done = subprocess.run(
            [*HOOK, "claude-code"], input=json.dumps(payload), capture_output=True, text=True, env=env, timeout=30
        )
        assert done.returncode == 0
        assert json.loads(done.stderr)["outcome"] == "server_unavailable"
        return notice_of(done.stdout)

    first = prompt("session-a")
    assert first is not None and "PowerContext recall is unavailable" in first and "hosts doctor" in first
    assert "private question" not in first and "secret-scope" not in first and down not in first
    assert prompt("session-a") is None  # never twice in one session
    assert prompt("session-b") is not None  # a new session is told again
    assert prompt("session-c", {"POWERCONTEXT_HOOK_QUIET": "1"}) is None
    assert prompt("session-c") is not None  # quiet suppressed it without spending the session's notice


def test_a_refusing_server_is_shown_once_and_an_empty_scope_never(server: LiveServer, api: Api, tmp_path: Path) -> None:
    loud = {"POWERCONTEXT_HOOK_QUIET": "", "POWERCONTEXT_HOOK_TIMEOUT_MS": "10000"}  # a refusal, not a slow machine
    missing = make_repo(tmp_path, "never:created")
    refused, _ = run_hook("codex", "question", missing, server.base_url, tmp_path / "s1", loud)
    assert json.loads(refused.stderr).get("error_code") == "scope-not-found", refused.stderr
    assert notice_of(refused.stdout) is not None and "scope-not-found" in str(notice_of(refused.stdout))
    empty, _ = run_hook(
        "codex", "question", make_repo(tmp_path, api.new_scope(prefix="e")), server.base_url, tmp_path / "s2", loud
    )
    assert empty.stdout == ""  # recall worked and found nothing: not an outage
