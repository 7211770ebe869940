"""A QA pass's CLI/SDK findings, each as a person meets it: the real CLI process, and where a Server is needed the
real Server on loopback. A malformed URL is an ``invalid-url`` usage error everywhere (never a traceback);
``config show`` reports what the Server would use and refuses what it refuses; errors say the allowed form, carry
a code and offer the nearest host; help and docs agree on exit codes; uvicorn's own line is in the log format."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest

from powercontext import BadServerUrl, PowerContextClient, SyncPowerContextClient
from powercontext.inference.config import local_model_installed
from tests.conftest import LiveServer
from tests.e2e.test_cli import CLI, run_cli

BAD_URLS = [
    ("http://[::1", "opens an IPv6 host with '[' but never closes it"),
    ("http://exa mple.com", "must not contain a space"),
    ("http://[zz]:8765", "bracketed host is not an IPv6 address"),
]
COMMANDS = [
    ("scope", "list"),
    ("context", "prepare", "-s", "p", "-q", "x"),
    ("memory", "search", "x", "-s", "p"),
    ("memory", "add", "a note", "-s", "p"),
    ("hosts", "doctor"),
]


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env.update(extra)
    return env


def _cli(
    *args: str, env: dict[str, str], stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], input=stdin, capture_output=True, text=True, env=env, cwd=cwd, timeout=60, check=False
    )


# -- 1: a malformed URL ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("url", "says"), BAD_URLS)
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_a_malformed_url_is_a_usage_error_for_every_command(command: tuple[str, ...], url: str, says: str) -> None:
    for given in (("--url", url), ()):  # the option, and POWERCONTEXT_URL
        result = run_cli(*command, *given, url=None if given else url)
        assert "Traceback" not in result.stderr, result.stderr
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("error: invalid-url: the Server URL") and says in result.stderr


@pytest.mark.parametrize(("url", "says"), BAD_URLS)
def test_both_sdk_clients_refuse_a_malformed_url_with_bad_server_url(url: str, says: str) -> None:
    with pytest.raises(BadServerUrl, match=re.escape(says)):
        SyncPowerContextClient(url)
    with pytest.raises(BadServerUrl, match=re.escape(says)):
        PowerContextClient(url)


def test_the_hook_fails_open_on_a_malformed_url_and_says_bad_url(tmp_path: Path) -> None:
    (tmp_path / ".powercontext.toml").write_text('scope_id = "project:payments"\n', encoding="utf-8")
    env = _clean_env(POWERCONTEXT_URL="http://[::1", POWERCONTEXT_CAPTURE="off", POWERCONTEXT_HOOK_QUIET="1")
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    hook_input = json.dumps({"prompt": "how do we retry payments?", "cwd": str(tmp_path), "session_id": "s"})
    done = _cli("hook", "claude-code", env=env, stdin=hook_input, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, "")
    line = json.loads(done.stderr)
    assert (line["outcome"], line["reason"]) == ("server_unavailable", "bad_url")


# -- 2: config show ----------------------------------------------------------------------------------------


def test_config_show_reports_the_embeddings_default_the_server_uses(tmp_path: Path) -> None:
    env = _clean_env(XDG_DATA_HOME=str(tmp_path))  # no settings file there
    shown = _cli("config", "show", "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    rows = {r["key"]: r for r in json.loads(shown.stdout)["settings"]}
    expected = "local" if local_model_installed() else "none"
    assert (rows["embeddings"]["value"], rows["embeddings"]["source"]) == (expected, "default")


@pytest.mark.parametrize(
    ("variable", "value"), [("POWERCONTEXT_PORT", "0"), ("POWERCONTEXT_EXTRACTION_REVIEW", "bogus")]
)
def test_config_show_refuses_a_setting_as_server_run_does(variable: str, value: str, tmp_path: Path) -> None:
    env = _clean_env(**{variable: value}, XDG_DATA_HOME=str(tmp_path))  # no settings file there
    shown = _cli("config", "show", env=env)
    served = _cli("server", "run", "--db", str(tmp_path / "never.db"), env=env)
    assert served.returncode == 2 and served.stderr.startswith(f"error: {variable}")
    assert (shown.returncode, shown.stdout, shown.stderr) == (served.returncode, "", served.stderr)


# -- 3: error messages and exit codes ----------------------------------------------------------------------


def test_an_id_or_cursor_of_the_wrong_form_is_told_the_allowed_form(server: LiveServer) -> None:
    bad_id = run_cli("scope", "create", "bad scope id", url=server.base_url)
    assert bad_id.returncode == 2
    assert "letters, digits and . _ : @ + = ~ -" in bad_id.stderr and "256" in bad_id.stderr, bad_id.stderr
    scope = f"qa-{uuid.uuid4().hex[:10]}"
    assert run_cli("scope", "create", scope, url=server.base_url).returncode == 0
    bad_cursor = run_cli("memory", "list", "-s", scope, "--cursor", "garbage", url=server.base_url)
    assert bad_cursor.returncode == 2 and "digits only" in bad_cursor.stderr, bad_cursor.stderr
    assert "has a form this field does not take" not in bad_id.stderr + bad_cursor.stderr


def test_a_profile_argument_without_an_equals_sign_is_a_usage_error() -> None:
    result = run_cli("profile", "set", "novalue", "-s", "project:payments", url="http://127.0.0.1:9")
    assert result.returncode == 2
    assert result.stderr.startswith("error: invalid-request: argument 1 is not KEY=VALUE"), result.stderr


def test_a_mistyped_host_is_answered_with_a_code_and_the_nearest_host(tmp_path: Path) -> None:
    env = _clean_env(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    for command in (("install", "claud-code", "--project", str(tmp_path)), ("doctor", "--host", "claud-code")):
        result = _cli("hosts", *command, env=env, cwd=tmp_path)
        assert result.returncode == 2
        assert result.stderr.startswith("error: unknown-host: unknown host 'claud-code'; did you mean claude-code?")
    as_json = _cli("hosts", "install", "claud-code", "--json", "--project", str(tmp_path), env=env, cwd=tmp_path)
    assert as_json.returncode == 2 and json.loads(as_json.stdout)["error"]["code"] == "unknown-host"


def test_indexing_proc_suggests_nothing_that_also_fails(server: LiveServer) -> None:
    # docs/code-evidence.md: /proc, /sys and /dev are refused over HTTP and in process (--db) alike.
    scope = f"qa-{uuid.uuid4().hex[:10]}"
    assert run_cli("scope", "create", scope, url=server.base_url).returncode == 0
    result = run_cli("code", "index", "/proc", "-s", scope, url=server.base_url)
    assert result.returncode == 1
    assert result.stderr == "error: code-root-forbidden: /proc, /sys and /dev are never indexed\n", result.stderr


def test_a_source_validation_message_has_no_pydantic_prefix(server: LiveServer) -> None:
    scope = f"qa-{uuid.uuid4().hex[:10]}"
    assert run_cli("scope", "create", scope, url=server.base_url).returncode == 0
    body = {"kind": "prompt", "content": "x" * 65537}
    answer = httpx.post(f"{server.base_url}/v1/scopes/{scope}/sources", json=body, timeout=30)
    assert answer.status_code == 422
    message = answer.json()["error"]["message"]
    assert message == "content: content is 65537 UTF-8 bytes; the limit is 65536", message


# -- 4: help and docs --------------------------------------------------------------------------------------


def test_help_lists_every_exit_code_docs_cli_lists() -> None:
    shown = run_cli("--help")
    assert shown.returncode == 0
    text = " ".join(shown.stdout.split())
    docs = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    table = docs[docs.index("## Exit codes") :].split("\n\n")[1]
    codes = [line.split("|")[1].strip() for line in table.splitlines()[2:]]
    assert codes == ["0", "1", "2", "3", "4", "5", "6"]
    for code in codes:
        assert f" {code} " in text, (code, text)
    assert "`purged`" in table


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_hook_help_prints_usage_and_anything_else_still_fails_open(flag: str) -> None:
    env = _clean_env()
    shown = _cli("hook", flag, env=env)
    assert (shown.returncode, shown.stderr) == (0, "")
    assert shown.stdout.startswith("Usage: powercontext hook HOST [stop]") and "claude-code" in shown.stdout
    other = _cli("hook", "nosuchhost", env=env, stdin="{}")
    assert (other.returncode, other.stdout) == (0, "")
    assert json.loads(other.stderr)["reason"] == "bad_host"


# -- 5: uvicorn's own line ---------------------------------------------------------------------------------


def test_a_malformed_request_is_logged_in_the_servers_format(server: LiveServer) -> None:
    port = int(server.base_url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/scopes HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nnot a chunk\r\n"
        )
        assert sock.recv(64).startswith(b"HTTP/1.1 400")
    log = server.log_text()
    assert 'WARNING uvicorn.error event=uvicorn.warning message="Invalid HTTP request received."' in log
    assert "WARNING:  " not in log and "not a chunk" not in log


@pytest.mark.parametrize(
    ("sections", "said"),
    [
        (["memory=0"], "--section memory=0: the limit for memory must be from 1 to 8"),
        (["experience=5"], "--section experience=5: the limit for experience must be from 1 to 2"),
        (["bogus=3"], "--section bogus=3: the family must be one of memory, topic-memory, experience, profile"),
        (["memory=2", "memory=3"], "--section: each family may appear in at most one section"),
    ],
)
def test_a_bad_section_is_told_in_words(sections: list[str], said: str) -> None:
    given = [arg for s in sections for arg in ("--section", s)]
    done = run_cli("context", "prepare", "-s", "project:a", "-q", "why", *given, url="http://127.0.0.1:9")
    assert (done.returncode, done.stderr.strip()) == (2, f"error: invalid-request: {said}")


def test_the_api_names_a_bad_section_without_the_unions_branches(server: LiveServer) -> None:
    body = {"scope_id": "project:a", "query": "why", "assembly": {"sections": [{"family": "memory", "limit": 0}]}}
    answered = httpx.post(server.base_url + "/v1/context/prepare", json=body, timeout=30)
    assert answered.status_code == 422
    message = answered.json()["error"]["message"]
    assert message.startswith("assembly.sections.0.limit: "), message
    assert "Assembly" not in message and "none" not in message, message


def test_experience_candidate_help_names_its_add_subcommand() -> None:
    result = run_cli("experience", "candidate", "--help")
    assert result.returncode == 0, result.stderr
    assert "add one" in result.stdout and "propose one" not in result.stdout
    assert re.search(r"^\W*add\b", result.stdout, re.MULTILINE), result.stdout


def test_an_unreachable_server_is_told_in_two_sentences() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = run_cli("scope", "list", url=f"http://127.0.0.1:{port}")
    assert result.returncode == 5, result.stderr
    assert "is it running? Start one with `powercontext server run`" in result.stderr, result.stderr
    assert "?;" not in result.stderr
