"""``powercontext code …`` as a user runs it: through the live server, and in-process with ``--db``."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests import forked
from tests.code_support import FIRST_RUN, lines_of, make_git_repo
from tests.conftest import LiveServer
from tests.e2e.test_cli import CLI, run_cli
from tests.support import Api


def test_index_query_and_snippet_through_the_server(server: LiveServer, api: Api, tmp_path: Path) -> None:
    url = server.base_url
    scope = api.new_scope(prefix="code-cli")
    repo = make_git_repo(tmp_path / "repo")
    # A relative path is the caller's, resolved by the CLI before it reaches the Server.
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    indexed = forked.run(
        [*CLI, "code", "index", "repo", "-s", scope, "--json", "--url", url],
        capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert indexed.returncode == 0, indexed.stderr
    result = json.loads(indexed.stdout)
    assert {k: result[k] for k in FIRST_RUN} == FIRST_RUN

    human = run_cli("code", "index", str(repo), "-s", scope, url=url)
    assert human.returncode == 0, human.stderr
    assert f"work tree {result['fingerprint']} (git)" in human.stdout
    assert f"{FIRST_RUN['files_indexed']} unchanged" in human.stdout
    assert str(tmp_path) not in human.stdout + human.stderr

    found = run_cli("code", "query", "parseHttpResponse", "-s", scope, "--limit", "2", url=url)
    assert found.returncode == 0, found.stderr
    assert "web/client.js:" in found.stdout and "export function parseHTTPResponse2" in found.stdout

    raw = json.loads(run_cli("code", "query", "shouldRetryCharge", "-s", scope, "--json", url=url).stdout)
    ev = raw["hits"][0]["code_evidence"]
    args = ["code", "snippet", ev["path"], "-s", scope, "--fingerprint", ev["fingerprint"]]
    args += ["--file-sha256", ev["file_sha256"], "--start", str(ev["start_line"]), "--end", str(ev["end_line"])]
    snippet = run_cli(*args, url=url)
    assert snippet.returncode == 0, snippet.stderr
    assert snippet.stdout.encode() == lines_of(repo / ev["path"], ev["start_line"], ev["end_line"])

    (repo / ev["path"]).write_text("rewritten\n")
    changed = run_cli(*args, url=url)
    assert changed.returncode == 4
    assert changed.stderr.strip().startswith("error: code-changed:")
    assert "Traceback" not in changed.stderr


def test_index_in_process_with_db(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "repo")
    db = tmp_path / "direct.db"
    no_store = run_cli("code", "index", str(repo), "-s", "direct", "--db", str(db))
    assert no_store.returncode == 3 and no_store.stderr.startswith("error: store-not-found:")
    assert not db.exists()  # a mistyped --db leaves no empty store behind

    from powercontext.store.sqlite import SqliteStore

    store = SqliteStore(db)
    store.close()
    missing = run_cli("code", "index", str(repo), "-s", "direct", "--db", str(db))
    assert missing.returncode == 3 and missing.stderr.startswith("error: scope-not-found:")
    store = SqliteStore(db)
    store.create_scope("direct", "Direct", [])
    store.close()
    done = run_cli("code", "index", str(repo), "-s", "direct", "--db", str(db), "--max-file-bytes", "2000000", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["files_skipped_large"] == 0
    bad = run_cli("code", "index", str(tmp_path / "nope"), "-s", "direct", "--db", str(db))
    assert bad.returncode == 2 and bad.stderr.startswith("error: invalid-code-path:")
    assert str(tmp_path) not in bad.stderr
