"""A new user's first hour at the shell (issue 41): every mistake answered with what is wrong and the exit code
docs/cli.md gives its class. The real ``powercontext`` process against a real Server on loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest

from tests.conftest import LiveServer
from tests.e2e.test_cli import CLI, run_cli
from tests.support import TLS, free_port, stop_process, wait_until


@pytest.fixture
def scope(server: LiveServer) -> str:
    scope_id = f"team:atlas-{uuid.uuid4().hex[:8]}"
    assert run_cli("scope", "create", scope_id, url=server.base_url).returncode == 0
    return scope_id


def _fresh(*args: str, env: dict[str, str] | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The command in a new interpreter, for what a fork would not show (stdin, a real bind)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    return subprocess.run(
        [*CLI, *args], input=stdin, capture_output=True, text=True, env={**base, **(env or {})}, timeout=60, check=False
    )


# -- item 1: server run's port -------------------------------------------------------------------------------


@pytest.mark.parametrize("port", ["99999", "0", "-1"])
def test_a_port_out_of_range_is_a_usage_error_before_any_banner(port: str, tmp_path: Path) -> None:
    result = run_cli("server", "run", "--port", port, "--db", str(tmp_path / "p.db"))
    assert result.returncode == 2, result.stderr
    assert "--port" in result.stderr and "PowerContext on" not in result.stderr


def test_a_port_out_of_range_in_the_environment_names_the_variable(tmp_path: Path) -> None:
    result = _fresh("server", "run", "--db", str(tmp_path / "p.db"), env={"POWERCONTEXT_PORT": "99999"})
    assert result.returncode == 2
    assert result.stderr.strip() == "error: POWERCONTEXT_PORT must be a port number from 1 to 65535"


def test_a_port_in_use_exits_4_with_port_in_use_and_no_start_up_banner(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _fresh("server", "run", "--port", str(port), "--db", str(tmp_path / "p.db"))
    assert result.returncode == 4, result.stderr
    assert result.stderr.startswith(f"error: port-in-use: 127.0.0.1:{port} is taken by another process")
    assert "PowerContext on" not in result.stderr and "server.start" not in result.stderr


# -- item 2: --url -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("127.0.0.1:19250", "has no scheme; write http://127.0.0.1:19250"),
        ("http://127.0.0.1:19250/v1", "is the base, without /v1: use http://127.0.0.1:19250"),
        ("http://127.0.0.1:19250/v1/", "is the base, without /v1: use http://127.0.0.1:19250"),
        ("ftp://127.0.0.1:19250", "must start with http:// or https://"),
        ("http://127.0.0.1:99999", "port must be a number from 1 to 65535"),
    ],
)
def test_a_malformed_url_says_what_is_wrong_with_it(url: str, says: str) -> None:
    for given in (("--url", url), ()):  # the option, and POWERCONTEXT_URL
        result = run_cli("scope", "list", *given, url=None if given else url)
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("error: invalid-url: the Server URL") and says in result.stderr


def test_a_url_with_a_path_the_server_does_not_serve_says_to_check_the_base(server: LiveServer) -> None:
    result = run_cli("scope", "list", "--url", server.base_url + "/api")
    assert result.returncode == 3
    assert "no such endpoint at /api/v1/scopes" in result.stderr
    assert "without /v1" in result.stderr


# -- item 3: typos -------------------------------------------------------------------------------------------


def test_a_mistyped_scope_is_answered_with_the_nearest_existing_one(server: LiveServer, scope: str) -> None:
    # Two neighbouring letters swapped; they must differ, or the "typo" is the Scope itself
    # (a random suffix ending in "11" did exactly that once in CI).
    i = next(i for i in range(len(scope) - 2, 0, -1) if scope[i] != scope[i + 1])
    typo = scope[:i] + scope[i + 1] + scope[i] + scope[i + 2 :]
    assert typo != scope
    result = run_cli("memory", "add", "A note.", "-s", typo, url=server.base_url)
    assert result.returncode == 3
    assert f"did you mean {scope}?" in result.stderr
    assert f"scope create {typo}" not in result.stderr  # never suggests creating the typo


def test_a_scope_far_from_every_existing_one_still_gets_the_create_hint(server: LiveServer) -> None:
    missing = f"zz-{uuid.uuid4().hex}"
    result = run_cli("memory", "list", "-s", missing, url=server.base_url)
    assert result.returncode == 3
    assert f"create it with `powercontext scope create {missing}`" in result.stderr


@pytest.mark.parametrize(
    ("args", "nearest"),
    [
        (("memory", "add", "x", "-s", "s", "--kind", "decison"), "decision"),
        (("memory", "search", "x", "-s", "s", "--mode", "hybird"), "hybrid"),
        (("memory", "list", "-s", "s", "--state", "retierd"), "retired"),
        (("memory", "revise", "am_1", "x", "-s", "s", "--expected-revision", "1", "--kind", "contraint"), "constraint"),
    ],
)
def test_a_mistyped_choice_is_refused_before_any_request(args: tuple[str, ...], nearest: str) -> None:
    # Nothing listens at the URL: a request would exit 5 (server-unreachable), not 2.
    result = run_cli(*args, url=f"http://127.0.0.1:{free_port()}")
    assert result.returncode == 2, result.stderr
    assert f"did you mean {nearest}?" in result.stderr


# -- item 4: error texts -------------------------------------------------------------------------------------


def test_a_blank_query_says_so_without_a_regular_expression(server: LiveServer, scope: str) -> None:
    for args in (("context", "prepare", "-s", scope, "-q", "   "), ("memory", "search", " \t ", "-s", scope)):
        result = run_cli(*args, url=server.base_url)
        assert result.returncode == 2, result.stderr
        assert result.stderr.strip() == "error: invalid-request: query: must contain a non-space character"


def test_prepare_option_errors_carry_the_documented_prefix(server: LiveServer, scope: str) -> None:
    result = run_cli("context", "prepare", "-s", scope, "-q", "q", "--section", "memory", url=server.base_url)
    assert result.returncode == 2
    assert result.stderr.startswith("error: invalid-request: --section takes FAMILY=LIMIT")


def test_import_errors_name_the_line_and_the_unknown_field(server: LiveServer, scope: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "fine", "kind": "fact"}\n{"text": "t", "kind": "fact", "tagz": ["a"]}\n', "utf-8")
    result = run_cli("memory", "import", str(bad), "-s", scope, url=server.base_url)
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: invalid-import-file: {bad}:2: unknown field 'tagz'; did you mean 'tags'?")
    assert "nothing was imported" in result.stderr


def test_a_non_utf8_import_names_the_line_and_byte(server: LiveServer, scope: str, tmp_path: Path) -> None:
    bad = tmp_path / "latin1.jsonl"
    first = b'{"text": "ok", "kind": "fact"}\n'
    bad.write_bytes(first + '{"text": "caf\u00e9", "kind": "fact"}\n'.encode("latin-1"))
    result = run_cli("memory", "import", str(bad), "-s", scope, url=server.base_url)
    assert result.returncode == 1
    offset = len(first) + len(b'{"text": "caf')
    assert result.stderr.strip() == (
        f"error: invalid-import-file: {bad}: not UTF-8 at line 2, byte 14 of the line (offset {offset} in the file);"
        " nothing was imported"
    )


def test_the_server_points_at_the_field_it_does_not_know_without_repeating_it(server: LiveServer) -> None:
    sid = f"s-{uuid.uuid4().hex[:8]}"
    with httpx.Client(base_url=server.base_url, verify=TLS) as http:
        assert http.post("/v1/scopes", json={"scope_id": sid, "title": "t"}).status_code == 201
        r = http.post(f"/v1/scopes/{sid}/atomic-memory", json={"text": "t", "kind": "fact", "tagz": ["x"]})
        batch = http.post(
            f"/v1/scopes/{sid}/atomic-memory/batch", json={"items": [{"text": "t", "kind": "fact", "kindd": 1}]}
        )
    assert r.status_code == 422
    message = r.json()["error"]["message"]
    assert message.startswith("body: unknown field; did you mean 'tags'? (accepted: ")
    assert "tagz" not in r.text
    assert batch.json()["error"]["message"].startswith("items.0: unknown field; did you mean 'kind'?")


# -- item 6: memory add from stdin or a file, import progress, GET / -----------------------------------------


def test_memory_add_reads_its_text_from_stdin_or_a_file(server: LiveServer, scope: str, tmp_path: Path) -> None:
    note = 'Deploys wait for the "green" build.\nRollbacks use the previous tag.'
    from_stdin = _fresh(
        "memory", "add", "-", "-s", scope, "--json", env={"POWERCONTEXT_URL": server.base_url}, stdin=note + "\n"
    )
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert json.loads(from_stdin.stdout)["text"] == note
    path = tmp_path / "note.txt"
    path.write_text("Settlement runs nightly at 02:00 UTC.\n", encoding="utf-8")
    from_file = run_cli("memory", "add", "--file", str(path), "-s", scope, "--json", url=server.base_url)
    assert from_file.returncode == 0, from_file.stderr
    assert json.loads(from_file.stdout)["text"] == "Settlement runs nightly at 02:00 UTC."
    both = run_cli("memory", "add", "text", "--file", str(path), "-s", scope, url=server.base_url)
    assert both.returncode == 2 and both.stderr.startswith("error: invalid-request: give the memory's TEXT")


def test_memory_import_reports_progress_on_stderr(server: LiveServer, scope: str, tmp_path: Path) -> None:
    lines = [json.dumps({"text": f"Imported fact number {n}.", "kind": "fact"}) for n in range(1200)]
    path = tmp_path / "many.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = run_cli("memory", "import", str(path), "-s", scope, "--json", url=server.base_url)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"scope_id": scope, "imported": 1200, "existed": 0}
    assert "importing" in result.stderr and "1200/1200" in result.stderr


def test_the_servers_root_points_to_the_inspector_and_the_docs(server: LiveServer) -> None:
    r = httpx.get(server.base_url + "/", verify=TLS)
    assert r.status_code == 200
    assert r.json()["inspector"] == "/inspector" and r.json()["docs"] == "/docs"
    assert httpx.get(server.base_url + "/docs", verify=TLS).status_code == 200


def test_a_first_write_and_prepare_print_nothing_from_the_libraries(tmp_path: Path) -> None:
    """`server run` as a user starts it: the first request of each route used to print a pydantic warning
    about FastAPI's body alias on the Server's stderr."""
    port = free_port()
    base = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    log = tmp_path / "stderr.log"
    with log.open("wb") as err:
        process = subprocess.Popen(
            [*CLI, "server", "run", "--port", str(port), "--db", str(tmp_path / "w.db")],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env={**base, "POWERCONTEXT_EMBEDDINGS": "none"},
        )
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_until(lambda: _answers(url + "/health/ready"), timeout=60), log.read_text()
        with httpx.Client(base_url=url, timeout=30) as client:
            assert client.post("/v1/scopes", json={"scope_id": "w:first", "title": "first"}).status_code == 201
            memory = {"text": "we deploy on fridays", "kind": "fact"}
            assert client.post("/v1/scopes/w:first/atomic-memory", json=memory).status_code == 201
            prepared = client.post("/v1/context/prepare", json={"scope_id": "w:first", "query": "deploy"})
            assert prepared.status_code == 200 and prepared.json()["status"] == "ready"
    finally:
        stop_process(process)
    text = log.read_text()
    assert "server.start" in text  # the log was written, and read after the requests
    assert "Warning" not in text and "warnings.warn" not in text, text


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.TransportError:
        return False
