"""The ``powercontext`` command, run as a user runs it, against the live server subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests import forked
from tests.conftest import LiveServer

CLI = [sys.executable, "-m", "powercontext"]


def run_cli(*args: str, url: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    if url is not None:
        env["POWERCONTEXT_URL"] = url
    env["COLUMNS"] = "200"  # keep Rich tables from folding ids in the assertions below
    return forked.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=env, check=False)


@pytest.fixture
def scope(server: LiveServer) -> str:
    scope_id = f"cli-{uuid.uuid4().hex[:12]}"
    result = run_cli("scope", "create", scope_id, "--title", "CLI test", url=server.base_url)
    assert result.returncode == 0, result.stderr
    assert scope_id in result.stdout
    return scope_id


def _artifact_id(add_output: str) -> str:
    first = add_output.split()[0]
    assert first.startswith("am_"), add_output
    return first


def _help_cost(env: dict[str, str]) -> tuple[float, float, str]:
    """One ``powercontext --help`` in a fresh interpreter: (CPU seconds it used, wall seconds, its output)."""
    start = time.perf_counter()
    child = subprocess.Popen([*CLI, "--help"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert child.stdout is not None
    out = child.stdout.read().decode()
    child.stdout.close()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, so Popen must not wait again
    assert child.returncode == 0
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - start, out


@pytest.mark.timed
def test_help_is_fast_and_lists_the_commands() -> None:
    # A fresh interpreter each time, as a user's shell starts one: start-up is what is measured here. Judged by
    # the CPU time the process used (0.30-0.36 s here), which a neighbour on the machine cannot inflate; wall
    # time on a busy CI machine ran to 0.65 s for the same work. The wall bound only catches waiting (a network
    # call, a lock) that CPU time would not show.
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    runs = [_help_cost(env) for _ in range(3)]
    for command in ("server", "scope", "memory", "context", "code"):
        assert command in runs[-1][2]
    assert min(cpu for cpu, _, _ in runs) < 0.5, runs
    assert min(wall for _, wall, _ in runs) < 2.0, runs


def test_memory_lifecycle_through_the_cli(server: LiveServer, scope: str) -> None:
    url = server.base_url
    added = run_cli("memory", "add", "Releases are cut every Tuesday.", "-s", scope, "--kind", "decision", url=url)
    assert added.returncode == 0, added.stderr
    artifact_id = _artifact_id(added.stdout)

    revised = run_cli(
        "memory", "revise", artifact_id, "Releases are cut every Thursday.", "-s", scope,
        "--expected-revision", "1", url=url,
    )  # fmt: skip
    assert revised.returncode == 0, revised.stderr
    assert "revision 2" in revised.stdout

    stale = run_cli("memory", "revise", artifact_id, "Other text.", "-s", scope, "--expected-revision", "1", url=url)
    assert stale.returncode == 4
    assert "revision-conflict" in stale.stderr

    original = run_cli("memory", "get", artifact_id, "-s", scope, "--revision", "1", "--json", url=url)
    assert json.loads(original.stdout)["text"] == "Releases are cut every Tuesday."

    found = run_cli("memory", "search", "thursday release", "-s", scope, url=url)
    assert f"{artifact_id}@2" in found.stdout

    forgotten = run_cli("memory", "forget", artifact_id, "-s", scope, "--json", url=url)
    assert json.loads(forgotten.stdout)["state"] == "forgotten"
    assert artifact_id not in run_cli("memory", "search", "thursday release", "-s", scope, url=url).stdout

    retired = run_cli("memory", "retire", artifact_id, "-s", scope, "--json", url=url)
    assert json.loads(retired.stdout)["state"] == "retired"
    still_readable = run_cli("memory", "get", artifact_id, "-s", scope, "--revision", "2", "--json", url=url)
    assert json.loads(still_readable.stdout)["text"] == "Releases are cut every Thursday."


def test_import_jsonl_then_prepare_with_receipt(server: LiveServer, scope: str, tmp_path: Path) -> None:
    url = server.base_url
    lines = [{"text": f"Import line {i} mentions the ledger reconciliation job.", "kind": "fact"} for i in range(1203)]
    source = tmp_path / "memories.jsonl"
    source.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    imported = run_cli("memory", "import", str(source), "-s", scope, url=url)
    assert imported.returncode == 0, imported.stderr
    assert "imported 1203 memories" in imported.stdout

    query = ["-s", scope, "-q", "ledger reconciliation"]
    raw = run_cli("context", "prepare", *query, "--include-receipt", "--json", url=url)
    assert raw.returncode == 0, raw.stderr
    prepared = json.loads(raw.stdout)
    assert prepared["status"] == "ready"
    assert len(prepared["receipt"]["selected"]) == 8
    assert {"family": "atomic-memory", "reason": "entry_limit", "count": 8} in prepared["receipt"]["omitted"]

    human = run_cli("context", "prepare", *query, "--include-receipt", url=url)
    assert human.returncode == 0, human.stderr
    assert "BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1" in human.stdout
    assert "Selected (injection order)" in human.stdout
    assert "entry_limit" in human.stdout

    plain = run_cli("context", "prepare", *query, "--json", url=url)
    assert set(json.loads(plain.stdout)) == {"schema", "status", "content", "content_bytes"}


def test_human_view_of_an_empty_result_explains_it(server: LiveServer, scope: str) -> None:
    result = run_cli(
        "context", "prepare", "-s", scope, "-q", "nothing matches this", "--include-receipt", url=server.base_url
    )
    assert result.returncode == 0, result.stderr
    assert "empty: nothing to inject" in result.stdout
    assert "selected: none" in result.stdout
    assert "no candidates (none stored or none matched): atomic-memory" in result.stdout


def test_import_rejects_a_bad_line_and_writes_nothing(server: LiveServer, scope: str, tmp_path: Path) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_text('{"text": "fine line about kiwis", "kind": "fact"}\n{"text": "kiwis", "kind": "rumour"}\n')
    result = run_cli("memory", "import", str(source), "-s", scope, url=server.base_url)
    assert result.returncode == 1
    assert ":2:" in result.stderr and "nothing was imported" in result.stderr
    found = run_cli("memory", "search", "kiwis", "-s", scope, "--json", url=server.base_url)
    assert json.loads(found.stdout)["hits"] == []


def test_errors_are_one_line_with_the_stable_code(server: LiveServer) -> None:
    result = run_cli("memory", "add", "text", "-s", "no-such-scope-" + uuid.uuid4().hex, url=server.base_url)
    assert result.returncode == 3
    assert result.stderr.strip().startswith("error: scope-not-found:")
    assert "Traceback" not in result.stderr


def test_unreachable_server_is_a_clear_error() -> None:
    result = run_cli("scope", "list", url="http://127.0.0.1:9")
    assert result.returncode == 5
    assert "server-unreachable" in result.stderr
    assert "Traceback" not in result.stderr


def test_prepare_with_explicit_sections(server: LiveServer, scope: str) -> None:
    url = server.base_url
    assert run_cli("memory", "add", "sectionword fact", "-s", scope, url=url).returncode == 0
    created = run_cli("topic", "create", "sectionword topic", "--body", "sectionword body", "-s", scope, url=url)
    assert created.returncode == 0, created.stderr
    args = ["context", "prepare", "-s", scope, "-q", "sectionword", "--include-receipt", "--json"]
    result = run_cli(*args, "--section", "topic-memory=1", "--section", "memory=1", url=url)
    assert result.returncode == 0, result.stderr
    receipt = json.loads(result.stdout)["receipt"]
    assert [s["family"] for s in receipt["selected"]] == ["topic-memory", "atomic-memory"]
    bad = run_cli(*args, "--section", "experience=3", url=url)
    assert bad.returncode == 2 and "experience" in bad.stderr and "Traceback" not in bad.stderr
    malformed = run_cli(*args, "--section", "memory", url=url)
    assert malformed.returncode == 2 and "FAMILY=LIMIT" in malformed.stderr


@pytest.mark.parametrize(
    ("setting", "value", "named"),
    [
        ("POWERCONTEXT_EMBEDDINGS", "openai-compatible", "POWERCONTEXT_EMBEDDINGS_BASE_URL"),
        ("POWERCONTEXT_DISABLED_FAMILIES", "bogus", "POWERCONTEXT_DISABLED_FAMILIES"),
        ("POWERCONTEXT_EMBEDDINGS_COOLDOWN", "soon", "POWERCONTEXT_EMBEDDINGS_COOLDOWN"),
        ("POWERCONTEXT_CODE_ROOTS", "relative/src", "POWERCONTEXT_CODE_ROOTS"),
        ("POWERCONTEXT_CODE_ROOTS", f"/tmp{os.pathsep}/proc", "POWERCONTEXT_CODE_ROOTS"),
        ("POWERCONTEXT_CODE_ROOTS", "/no/such/directory", "POWERCONTEXT_CODE_ROOTS"),
        ("POWERCONTEXT_RERANK", "listwise", "POWERCONTEXT_RERANK"),
        ("POWERCONTEXT_GENERATION_SETTINGS", '{"url": "http://x"}', "POWERCONTEXT_GENERATION_SETTINGS"),
        ("POWERCONTEXT_EXPANSION", "always", "POWERCONTEXT_EXPANSION"),
        ("POWERCONTEXT_HYBRID_FUSION", "borda", "POWERCONTEXT_HYBRID_FUSION"),
    ],
)
def test_a_bad_setting_stops_the_server_with_one_line(tmp_path: Path, setting: str, value: str, named: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env[setting] = value
    result = forked.run(
        [*CLI, "server", "run", "--db", str(tmp_path / "x.db")], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 2
    assert named in result.stderr and "Traceback" not in result.stderr
