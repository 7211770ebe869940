"""``powercontext memory import`` is safe to re-run: a crash mid-import, then the same command again, ends
with exactly one copy of every line, and the CLI says how many lines were already stored.

Both crashes are real SIGKILLs of real processes: the CLI while it uploads, and the Server while it writes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests import forked
from tests.conftest import LiveServer, live_server
from tests.support import count_artifacts, unique, wait_until

CLI = [sys.executable, "-m", "powercontext"]
LINES = 5_000  # 10 batches: the kill lands after the second (kill_when_partly_written), long before the last


def cli_env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env["POWERCONTEXT_URL"] = url
    return env


def start_import(source: Path, scope_id: str, url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, "memory", "import", str(source), "-s", scope_id],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(url),
    )


def run_import(source: Path, scope_id: str, url: str) -> subprocess.CompletedProcess[str]:
    return forked.run(
        [*CLI, "memory", "import", str(source), "-s", scope_id],
        capture_output=True,
        text=True,
        timeout=300,
        env=cli_env(url),
        check=False,
    )


def write_lines(path: Path, count: int, marker: str) -> list[str]:
    texts = [f"{marker} import line {i} about the settlement ledger" for i in range(count)]
    path.write_text("".join(json.dumps({"text": t, "kind": "fact"}) + "\n" for t in texts), encoding="utf-8")
    return texts


def stored_texts(db_path: Path, scope_id: str) -> Counter[str]:
    from pysqlite3 import dbapi2

    conn = dbapi2.connect(str(db_path))
    try:
        rows = conn.execute(
            "SELECT r.body FROM artifacts a JOIN revisions r ON r.artifact = a.id WHERE a.scope_id = ?", (scope_id,)
        ).fetchall()
    finally:
        conn.close()
    return Counter(str(row[0]) for row in rows)


def create_scope(url: str, scope_id: str) -> None:
    r = httpx.post(f"{url}/v1/scopes", json={"scope_id": scope_id, "title": "import"}, timeout=30)
    assert r.status_code == 201, r.text


def kill_when_partly_written(victim: subprocess.Popen[bytes] | subprocess.Popen[str], db: Path, scope_id: str) -> int:
    """SIGKILL ``victim`` once at least two batches are committed; the number of rows stored at that moment."""
    assert wait_until(lambda: count_artifacts(db, scope_id) >= 1000, timeout=120, interval=0.01)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    return settled_count(db, scope_id)


def settled_count(db: Path, scope_id: str, quiet: float = 2.0) -> int:
    """The row count once it has not changed for ``quiet`` seconds: a batch the Server had already received
    from a killed CLI still commits (all or nothing) a moment later."""
    count, since = count_artifacts(db, scope_id), time.monotonic()
    while time.monotonic() - since < quiet:
        time.sleep(0.1)
        now = count_artifacts(db, scope_id)
        if now != count:
            count, since = now, time.monotonic()
    return count


def test_rerun_after_the_cli_is_killed_stores_each_line_once(tmp_path: Path) -> None:
    scope_id = unique("import")
    source = tmp_path / "memories.jsonl"
    texts = write_lines(source, LINES, scope_id)
    with live_server(tmp_path) as live:
        create_scope(live.base_url, scope_id)
        cli = start_import(source, scope_id, live.base_url)
        partial = kill_when_partly_written(cli, live.db_path, scope_id)
        assert 0 < partial < LINES, "the CLI was not killed in the middle of the import"

        rerun = run_import(source, scope_id, live.base_url)
        assert rerun.returncode == 0, rerun.stderr
        assert f"imported {LINES - partial} memories into {scope_id}; {partial} already existed" in rerun.stdout
        assert stored_texts(live.db_path, scope_id) == Counter(texts)

        # A third run writes nothing at all.
        again = run_import(source, scope_id, live.base_url)
        assert f"imported 0 memories into {scope_id}; {LINES} already existed" in again.stdout
        assert count_artifacts(live.db_path, scope_id) == LINES


def test_rerun_after_the_server_is_killed_stores_each_line_once(tmp_path: Path) -> None:
    scope_id = unique("import")
    source = tmp_path / "memories.jsonl"
    texts = write_lines(source, LINES, scope_id)
    with live_server(tmp_path, log_name="first.log") as first:
        create_scope(first.base_url, scope_id)
        cli = start_import(source, scope_id, first.base_url)
        partial = kill_when_partly_written(first.process, first.db_path, scope_id)
        _, stderr = cli.communicate(timeout=60)
        assert cli.returncode == 5, "the CLI did not notice the Server went away"
        # No answer came for the batch in flight: the CLI cannot know whether it was stored, and says so.
        assert "it may or may not have been stored" in stderr and "wrote nothing" not in stderr, stderr
        assert "re-running the same import is safe" in stderr
        assert "?;" not in stderr, stderr  # "is it running? Start one ...", not "is it running?; start one"
    assert 0 < partial < LINES, "the Server was not killed in the middle of the import"
    with live_server(tmp_path, log_name="second.log") as second:
        after_restart = count_artifacts(second.db_path, scope_id)  # a batch in flight is all or nothing
        assert after_restart % 500 == 0
        rerun = run_import(source, scope_id, second.base_url)
        assert rerun.returncode == 0, rerun.stderr
        assert f"; {after_restart} already existed" in rerun.stdout
        assert stored_texts(second.db_path, scope_id) == Counter(texts)


def test_a_line_s_own_idempotency_key_is_used(tmp_path: Path, server: LiveServer) -> None:
    """Two different files whose lines carry the same keys: the second import writes nothing."""
    scope_id = unique("import")
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    lines = [{"text": f"{scope_id} keyed line {i}", "kind": "note", "idempotency_key": f"k-{i}"} for i in range(3)]
    first.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    # Another file (another content hash): a leading blank line moves every line number too.
    second.write_text("\n" + "".join(json.dumps(line) + "\n" for line in reversed(lines)), encoding="utf-8")
    # Keys are per Scope, and the Scope is new: the shared Server serves this as well as a fresh one.
    create_scope(server.base_url, scope_id)
    assert "imported 3 memories" in run_import(first, scope_id, server.base_url).stdout
    again = run_import(second, scope_id, server.base_url)
    assert again.returncode == 0, again.stderr
    assert f"imported 0 memories into {scope_id}; 3 already existed" in again.stdout
    assert count_artifacts(server.db_path, scope_id) == 3


@pytest.mark.parametrize("replay", [False, True])
def test_the_batch_answer_marks_replayed_items(server: LiveServer, replay: bool) -> None:
    scope_id = unique("batch")  # a new Scope: its keys are its own on the shared Server
    create_scope(server.base_url, scope_id)
    url = f"{server.base_url}/v1/scopes/{scope_id}/atomic-memory/batch"
    keyed = {"text": "keyed", "kind": "fact", "idempotency_key": "same-key"}
    if replay:
        assert httpx.post(url, json={"items": [keyed]}, timeout=30).status_code == 201
    r = httpx.post(url, json={"items": [keyed, {"text": "unkeyed", "kind": "fact"}]}, timeout=30)
    assert r.status_code == 201, r.text
    assert [item["replayed"] for item in r.json()["items"]] == [replay, False]


def test_help_says_a_rerun_is_safe() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env["COLUMNS"] = "200"
    result = forked.run(
        [*CLI, "memory", "import", "--help"], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "Re-running an import is safe" in text
    assert "idempotency key" in text and "already existed" in text
