"""OpenCode and Pi as their real CLIs (pinned, from npm into the cache `.ci/run` keeps) against a fake model.

For each host, in a throwaway HOME and a fresh git project: ``powercontext hosts install HOST --scope S
--yes``, then one non-interactive prompt (``opencode run``, ``pi -p``). With the real Server up, the
memory's unique marker reaches the logged model request; with the Server stopped the host still answers
and exits 0; with a Server that accepts and never answers, the hook hangs up within the hook budget
(+ 0.5 s) of the prepare request and the prompt goes on to the model. Without the CLI the tests skip,
except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests import forked
from tests.conftest import REPO_ROOT, LiveServer
from tests.hosts_e2e.pinned import pinned_cli
from tests.support import Api, free_port, unique, wait_until

OPENCODE_VERSION = "1.18.33"
# Generous so that a loaded CI machine still starts the hook's interpreter in time; the bound scales with it.
BUDGET_MS = 3000
QUESTION = "How do payments deploys reach production from the release branch?"
HOST_TIMEOUT_S = 240
ANSWER = "fake-model-answer"  # what tests/fake_models/openai_chat.py answers every prompt with


def host_cli(name: str) -> str:
    return str(pinned_cli(name))


@dataclass
class FakeModel:
    url: str
    log: Path

    def requests(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def fake_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeModel]:
    base = tmp_path_factory.mktemp("model")
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_models.openai_chat", str(port), str(base / "requests.jsonl")],
        cwd=str(REPO_ROOT),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == b"ready"
        yield FakeModel(f"http://127.0.0.1:{port}/v1", base / "requests.jsonl")
    finally:
        process.terminate()
        process.wait(timeout=10)


@dataclass
class HungServer:
    """Accepts connections and never answers.

    For prepare requests it records when each connection arrived and when the client hung up; any other request
    (a hook's capture of the prompt, posted beside recall) is only counted by path in ``others``.
    """

    sock: socket.socket
    accepted_at: list[float] = field(default_factory=list)
    closed_at: list[float] = field(default_factory=list)
    others: list[str] = field(default_factory=list)
    held: list[socket.socket] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            threading.Thread(target=self._read_until_closed, args=(conn, time.time()), daemon=True).start()

    def _read_until_closed(self, conn: socket.socket, accepted: float) -> None:
        head = b""
        try:
            while b"\r\n" not in head and (chunk := conn.recv(65536)):
                head += chunk
            request_line = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
            path = request_line[1] if len(request_line) > 1 else ""
            if path != "/v1/context/prepare":
                self.others.append(path)
                return
            self.accepted_at.append(accepted)
            while conn.recv(65536):
                pass
        except OSError:
            pass
        self.closed_at.append(time.time())


def seed_marker(api: Api, host: str) -> tuple[str, str]:
    """A new Scope holding one constraint with a unique marker; the Scope and the marker."""
    scope_id = api.new_scope(prefix=f"host-{host}")
    marker = unique("marker").replace("-", "")
    api.add(scope_id, f"Payments deploys reach production from the release branch only ({marker})", kind="constraint")
    return scope_id, marker


def assert_answered(done: subprocess.CompletedProcess[str]) -> None:
    """The host exited 0 with the fake model's answer: the prompt went on, whatever recall did."""
    assert done.returncode == 0, done.stdout + done.stderr
    assert ANSWER in done.stdout


def replies(api: Api, scope_id: str) -> list[dict[str, Any]]:
    """The Scope's ``reply`` Sources, each as its exact read (content, origin)."""
    listed = api.get(f"/v1/scopes/{scope_id}/sources?limit=50")
    assert listed.status_code == 200, listed.text
    ids = [item["source_id"] for item in listed.json()["items"] if item["kind"] == "reply"]
    return [api.get(f"/v1/scopes/{scope_id}/sources/{source_id}").json() for source_id in ids]


def assert_reply_captured(api: Api, scope_id: str, host: str) -> None:
    """The agent's final answer (the fake model's text) is stored, once, as a ``reply`` Source from ``host``: the
    host handed it to the hook after it answered, without holding the prompt for it."""
    assert wait_until(lambda: any(ANSWER in r["content"] for r in replies(api, scope_id)), timeout=30), (
        f"no reply Source with the model's answer: {replies(api, scope_id)}"
    )
    (reply,) = replies(api, scope_id)
    assert reply["origin"]["host"] == host and reply["origin"].get("session_id"), reply["origin"]


def assert_gave_up_within_budget(hung: HungServer, model_requests: list[dict[str, Any]]) -> None:
    """One prepare request, dropped within the hook budget + 0.5 s, before the prompt reached the model."""
    assert len(hung.accepted_at) == 1, "one prepare request per prompt"
    assert hung.closed_at, "the hook gave up on the request"
    assert hung.closed_at[0] - hung.accepted_at[0] <= BUDGET_MS / 1000 + 0.5
    assert min(r["received_at"] for r in model_requests) >= hung.closed_at[0]


@pytest.fixture
def hung_server() -> Iterator[HungServer]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    hung = HungServer(sock)
    threading.Thread(target=hung.serve, daemon=True).start()
    try:
        yield hung
    finally:
        sock.close()
        for conn in hung.held:
            conn.close()


def fresh_project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=30)
    return project


def host_env(home: Path, powercontext_url: str) -> dict[str, str]:
    """A throwaway HOME; PowerContext's ``powercontext`` and the host CLIs on PATH; nothing else of ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POWERCONTEXT_", "OPENCODE", "PI_", "XDG_"))}
    env.update(
        HOME=str(home),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        POWERCONTEXT_URL=powercontext_url,
        POWERCONTEXT_HOOK_TIMEOUT_MS=str(BUDGET_MS),
        # Stay on loopback: no update checks, model catalogues, telemetry, LSP downloads or sharing.
        OPENCODE_DISABLE_AUTOUPDATE="1",
        OPENCODE_DISABLE_MODELS_FETCH="1",
        OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
        OPENCODE_DISABLE_LSP_DOWNLOAD="1",
        OPENCODE_DISABLE_SHARE="1",
        PI_OFFLINE="1",
        PI_TELEMETRY="0",
    )
    return env


def configure_model(host: str, home: Path, model: FakeModel) -> None:
    """The user's own host configuration in the throwaway HOME: one provider, the fake model."""
    if host == "opencode":
        config_dir = home / ".config" / "opencode"
        # OpenCode installs @opencode-ai/plugin into its config directory at start unless node_modules and
        # a lock naming it exist; a real user's first start does this once, online.
        (config_dir / "node_modules").mkdir(parents=True)
        lock = {"packages": {"": {"dependencies": {"@opencode-ai/plugin": OPENCODE_VERSION}}}}
        (config_dir / "package-lock.json").write_text(json.dumps(lock), encoding="utf-8")
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Fake",
            "options": {"baseURL": model.url, "apiKey": "test-key"},
            "models": {"fake-model": {"name": "Fake model"}},
        }
        config = {"provider": {"fake": provider}, "model": "fake/fake-model", "autoupdate": False, "share": "disabled"}
        (config_dir / "opencode.json").write_text(json.dumps(config), encoding="utf-8")
    else:
        agent_dir = home / ".pi" / "agent"
        agent_dir.mkdir(parents=True)
        compat = {"supportsDeveloperRole": False, "supportsReasoningEffort": False}
        provider = {"baseUrl": model.url, "api": "openai-completions", "apiKey": "test-key", "compat": compat}
        models = {"providers": {"fake": {**provider, "models": [{"id": "fake-model"}]}}}
        (agent_dir / "models.json").write_text(json.dumps(models), encoding="utf-8")


def install(host: str, project: Path, scope_id: str, env: dict[str, str]) -> None:
    done = forked.run(
        [sys.executable, "-m", "powercontext", "hosts", "install", host, "--scope", scope_id, "--yes"],
        cwd=str(project),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def run_prompt(host: str, project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    cli = host_cli(host)
    if host == "opencode":
        command = [cli, "run", QUESTION]
    else:
        command = [cli, "--provider", "fake", "--model", "fake-model", "-p", QUESTION]
    # OpenCode takes its directory from PWD (as a shell sets it), not from the process's working directory.
    return subprocess.run(
        command,
        cwd=str(project),
        env={**env, "PWD": str(project)},
        capture_output=True,
        text=True,
        timeout=HOST_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )


def prepared(
    host: str, tmp_path: Path, model: FakeModel, url: str, scope_id: str
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """Install into a fresh project and HOME, run one prompt; the model requests that prompt made."""
    host_cli(host)
    home = tmp_path / "home"
    home.mkdir()
    project = fresh_project(tmp_path)
    env = host_env(home, url)
    configure_model(host, home, model)
    install(host, project, scope_id, env)
    before = len(model.requests())
    done = run_prompt(host, project, env)
    return done, model.requests()[before:]


def with_question(requests: list[dict[str, Any]]) -> list[str]:
    """Each of the agent's model requests (they offer tools; OpenCode's title request does not) that carries
    the user's question, as text."""
    texts = [json.dumps(r["body"], ensure_ascii=False) for r in requests if r["body"].get("tools")]
    return [t for t in texts if QUESTION in t]


HOSTS = ["opencode", "pi"]


@pytest.mark.parametrize("host", HOSTS)
def test_context_reaches_the_model_on_the_first_prompt(
    host: str, tmp_path: Path, server: LiveServer, api: Api, fake_model: FakeModel
) -> None:
    scope_id, marker = seed_marker(api, host)
    done, requests = prepared(host, tmp_path, fake_model, server.base_url, scope_id)
    assert_answered(done)
    carrying = with_question(requests)
    assert carrying, "the prompt reached the model"
    assert all(marker in text for text in carrying), "every model call of the turn carries the prepared context"
    if host == "opencode":  # opencode.json's mcp entry started `powercontext mcp`: its tools reach the model
        offered = {t["function"]["name"] for r in requests for t in r["body"].get("tools", [])}
        assert {"powercontext_scope_list", "powercontext_memory_search"} <= offered, sorted(offered)


@pytest.mark.parametrize("host", HOSTS)
def test_the_final_answer_is_captured_as_a_reply_source(
    host: str, tmp_path: Path, server: LiveServer, api: Api, fake_model: FakeModel
) -> None:
    scope_id, _ = seed_marker(api, host)
    done, _ = prepared(host, tmp_path, fake_model, server.base_url, scope_id)
    assert_answered(done)
    assert_reply_captured(api, scope_id, host)


@pytest.mark.parametrize("host", HOSTS)
def test_server_down_still_answers(host: str, tmp_path: Path, fake_model: FakeModel) -> None:
    done, requests = prepared(host, tmp_path, fake_model, f"http://127.0.0.1:{free_port()}", "project:down")
    assert_answered(done)
    assert with_question(requests)


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.timed
def test_hung_server_costs_at_most_the_hook_budget(
    host: str, tmp_path: Path, fake_model: FakeModel, hung_server: HungServer
) -> None:
    done, requests = prepared(host, tmp_path, fake_model, hung_server.url, "project:hung")
    assert_answered(done)
    # The prompt went on after the hook gave up (what the host then does before calling the model is its own
    # work: seconds for OpenCode on a busy machine, so it is not timed here).
    assert_gave_up_within_budget(hung_server, requests)
