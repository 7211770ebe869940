"""Code indexing is confined, never runs what a repository configures, and refuses bad paths cleanly.

Against real Server processes with an access file and ``POWERCONTEXT_CODE_ROOTS``, and the in-process
``powercontext code index --db``. The malicious repository is built here with the git command line; a
control run of plain git on it proves each planted command really is live.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests import forked
from tests.code_support import git, make_git_repo, write
from tests.conftest import REPO_ROOT, LiveServer, live_server
from tests.support import error_code

ADMIN, WRITER, INDEXER = "admin-token-c0de", "writer-token-c0de", "indexer-token-c0de"
MAINTAINER = "maintainer-token-c0de"  # read, write and index: what a repository owner's agent would hold
SECRET = "OUTSIDE-ROOT-SECRET-8841"
CLI = [sys.executable, "-m", "powercontext"]


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass
class Confined:
    live: LiveServer
    allowed: Path  # the only code root
    outside: Path  # a directory next to the root, not in it
    markers: Path  # where a planted command would leave a file
    helper_bin: Path  # a directory on the Server's PATH holding git-remote-evilhelper

    def client(self, token: str) -> httpx.Client:
        return httpx.Client(base_url=self.live.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


@pytest.fixture(scope="module")
def confined(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Confined]:
    base = tmp_path_factory.mktemp("confine")
    allowed, outside, markers, helper_bin = (base / n for n in ("allowed", "outside", "markers", "bin"))
    for d in (allowed, outside, markers, helper_bin):
        d.mkdir()
    write(outside, "secret.py", f"def leaked():\n    return '{SECRET}'\n")
    # Called as ``git-remote-evilhelper <remote> <url>``; a repository names its marker directory as the url.
    helper = write(helper_bin, "git-remote-evilhelper", '#!/bin/sh\ntouch "$2/remote-helper"\n')
    helper.chmod(0o755)
    grants = {
        "principals": [
            {"name": "admin", "token_sha256": digest(ADMIN), "read": ["*"], "write": ["*"]},
            {"name": "writer", "token_sha256": digest(WRITER), "write": ["team:*"]},
            {"name": "indexer", "token_sha256": digest(INDEXER), "read": ["team:*"], "index": ["team:*"]},
            {
                "name": "maintainer",
                "token_sha256": digest(MAINTAINER),
                "write": ["team:*"],
                "index": ["team:*"],
            },
        ]
    }
    (base / "access.json").write_text(json.dumps(grants), encoding="utf-8")
    settings = {
        "POWERCONTEXT_ACCESS_FILE": str(base / "access.json"),
        "POWERCONTEXT_CODE_ROOTS": str(allowed),
        # A remote helper a malicious repository could name is on the Server's PATH.
        "PATH": f"{helper_bin}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    with live_server(base, settings) as live:
        yield Confined(live, allowed, outside, markers, helper_bin)


def new_scope(c: Confined, name: str) -> str:
    scope_id = f"team:{name}-{os.urandom(4).hex()}"
    with c.client(ADMIN) as admin:
        assert admin.post("/v1/scopes", json={"scope_id": scope_id, "title": name}).status_code == 201
    return scope_id


def code_trees(db: Path, scope_id: str) -> int:
    """Registered work trees of a Scope, read straight from the SQLite file."""
    from pysqlite3 import dbapi2

    conn = dbapi2.connect(str(db))
    try:
        return int(conn.execute("SELECT COUNT(*) FROM code_trees WHERE scope_id = ?", (scope_id,)).fetchone()[0])
    finally:
        conn.close()


def query_hits(http: httpx.Client, scope_id: str, query: str) -> list[dict[str, object]]:
    r = http.post(f"/v1/scopes/{scope_id}/code/query", json={"query": query, "limit": 20})
    assert r.status_code == 200, r.text
    hits: list[dict[str, object]] = r.json()["hits"]
    return hits


# -- 1. confinement: roots and the index grant -------------------------------------------------------


def test_write_does_not_grant_indexing_and_index_does(confined: Confined) -> None:
    repo = make_git_repo(confined.allowed / "grant-repo")
    scope_id = new_scope(confined, "grant")
    with confined.client(WRITER) as writer:
        r = writer.post(f"/v1/scopes/{scope_id}/code/index", json={"path": str(repo)})
        assert (r.status_code, error_code(r)) == (403, "scope-forbidden"), r.text
        assert "ask for an 'index' grant" in r.json()["error"]["message"]
        # The same principal may still write what its grant covers.
        memory = {"text": "writer note", "kind": "fact"}
        assert writer.post(f"/v1/scopes/{scope_id}/atomic-memory", json=memory).status_code == 201
    assert code_trees(confined.live.db_path, scope_id) == 0
    with confined.client(INDEXER) as indexer:
        r = indexer.post(f"/v1/scopes/{scope_id}/code/index", json={"path": str(repo)})
        assert r.status_code == 200, r.text
        assert r.json()["files_indexed"] > 0
        assert query_hits(indexer, scope_id, "shouldRetryCharge")
        # An index grant is not a write grant.
        denied = indexer.post(f"/v1/scopes/{scope_id}/atomic-memory", json={"text": "x", "kind": "fact"})
        assert (denied.status_code, error_code(denied)) == (403, "scope-forbidden")
        assert "ask for a 'write' grant" in denied.json()["error"]["message"]


def test_an_index_grant_reaches_only_inside_the_roots(confined: Confined) -> None:
    os.symlink("/etc", confined.allowed / "etc-link")
    os.symlink("/proc/self", confined.allowed / "proc-link")
    os.symlink(confined.outside, confined.allowed / "outside-link")
    scope_id = new_scope(confined, "roots")
    refused = [
        "/etc",
        "/proc",
        "/proc/self",
        "/proc/1/cwd",
        "/sys/kernel",
        "/dev",
        str(confined.outside),
        str(confined.allowed.parent),
        str(confined.allowed / ".." / "outside"),
        str(confined.allowed / "etc-link"),
        str(confined.allowed / "proc-link"),
        str(confined.allowed / "outside-link"),
        "/no/such/directory",  # outside the roots: refused before the file system is looked at
    ]
    with confined.client(INDEXER) as indexer:
        for path in refused:
            r = indexer.post(f"/v1/scopes/{scope_id}/code/index", json={"path": path})
            assert (r.status_code, error_code(r)) == (403, "code-root-forbidden"), (path, r.text)
            assert "POWERCONTEXT_CODE_ROOTS" in r.text or "never indexed" in r.text
            assert str(confined.allowed.parent) not in r.text
        assert code_trees(confined.live.db_path, scope_id) == 0
        assert query_hits(indexer, scope_id, "root nologin bash") == []
        assert query_hits(indexer, scope_id, "leaked") == []


def test_symlinks_inside_a_root_that_point_out_of_it_are_not_read(confined: Confined) -> None:
    tree = confined.allowed / "links"
    write(tree, "kept.py", "def keptInsideTheRoot():\n    return 1\n")
    os.symlink(confined.outside / "secret.py", tree / "secret_link.py")
    os.symlink("/etc/passwd", tree / "passwd.txt")
    os.symlink(confined.outside, tree / "outside_dir")  # a directory link: never entered
    scope_id = new_scope(confined, "links")
    with confined.client(INDEXER) as indexer:
        r = indexer.post(f"/v1/scopes/{scope_id}/code/index", json={"path": str(tree)})
        assert r.status_code == 200, r.text
        result = r.json()
        assert result["files_indexed"] == 1 and result["files_skipped_other"] == 2
        assert query_hits(indexer, scope_id, "keptInsideTheRoot")
        assert query_hits(indexer, scope_id, "leaked") == []
        everything = "\n".join(str(h) for h in query_hits(indexer, scope_id, "kept inside root leaked passwd"))
        assert SECRET not in everything and "root:x:0:0" not in everything


def test_without_roots_http_indexing_is_refused_but_the_cli_indexes_in_process(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "repo")
    with live_server(tmp_path) as live, httpx.Client(base_url=live.base_url, timeout=60) as http:
        assert http.post("/v1/scopes", json={"scope_id": "open", "title": "t"}).status_code == 201
        r = http.post("/v1/scopes/open/code/index", json={"path": str(repo)})
        assert (r.status_code, error_code(r)) == (403, "code-root-forbidden"), r.text
        assert "POWERCONTEXT_CODE_ROOTS" in r.json()["error"]["message"]
        assert code_trees(live.db_path, "open") == 0
    # In process, the CLI's own user decides: no roots needed, but kernel file systems stay out.
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}

    def cli(path: str) -> subprocess.CompletedProcess[str]:
        args = [*CLI, "code", "index", path, "-s", "open", "--db", str(live.db_path), "--json"]
        return forked.run(args, capture_output=True, text=True, env=env, timeout=120, check=False)

    done = cli(str(repo))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["files_indexed"] > 0
    for path in ("/proc", "/proc/self", "/sys/kernel", "/dev"):
        refused = cli(path)
        assert refused.returncode == 1, refused.stdout
        assert refused.stderr.startswith("error: code-root-forbidden:") and "Traceback" not in refused.stderr
    assert code_trees(live.db_path, "open") == 1


# -- 2. a repository's configuration never runs ---------------------------------------------------------


def plant_commands(repo: Path, markers: Path, *, via_include: bool) -> None:
    """Set every command-naming setting git has to a command that leaves a marker file, directly in
    ``.git/config`` or through ``include.path`` / ``includeIf``; plant hooks; make the repository a
    partial clone missing its first commit, with promisor remotes that run commands when fetched from."""

    def touch(name: str) -> str:
        return f"touch {markers}/{name}"

    # The first commit's object goes missing: listing root commits then triggers a lazy fetch.
    first = git(repo, "rev-list", "--max-parents=0", "HEAD").split()[0]
    (repo / ".git" / "objects" / first[:2] / first[2:]).unlink()
    hooks = repo / ".git" / "hooks"
    for hook in ("post-index-change", "reference-transaction", "post-checkout", "pre-commit", "fsmonitor-watchman"):
        path = write(hooks, hook, f"#!/bin/sh\n{touch('hook-' + hook)}\n")
        path.chmod(0o755)
    # The repository format is read from .git/config alone, never through includes.
    git(repo, "config", "core.repositoryformatversion", "1")
    git(repo, "config", "extensions.partialClone", "origin")
    settings = {
        "remote.origin.url": f"ext::sh -c {touch('ext-transport').replace(' ', '% ')}",
        "remote.origin.promisor": "true",
        "remote.local.url": str(repo),
        "remote.local.promisor": "true",
        "remote.local.uploadpack": f"{touch('uploadpack')}; git-upload-pack",
        "remote.helper.url": f"evilhelper::{markers}",
        "remote.helper.promisor": "true",
        "protocol.allow": "always",
        "protocol.ext.allow": "always",
        "protocol.file.allow": "always",
        "core.fsmonitor": f"{touch('fsmonitor')}; false",
        "core.hooksPath": str(hooks),
        "core.pager": f"{touch('core-pager')}; cat",
        "pager.ls-files": f"{touch('pager-ls-files')}; cat",
        "diff.external": touch("diff-external"),
        "filter.evil.clean": f"{touch('filter-clean')}; cat",
        "filter.evil.smudge": f"{touch('filter-smudge')}; cat",
        "filter.evil.process": touch("filter-process"),
        "filter.evil.required": "true",
        "diff.evil.textconv": f"{touch('textconv')}; cat",
        "core.sshCommand": touch("ssh-command"),
        "core.askPass": touch("askpass"),
        "credential.helper": f"!{touch('credential-helper')}",
        "core.editor": touch("editor"),
        "sequence.editor": touch("sequence-editor"),
        "gpg.program": touch("gpg"),
        "core.alternateRefsCommand": touch("alternate-refs"),
        "uploadpack.packObjectsHook": touch("pack-objects-hook"),
        "core.untrackedCache": "true",
        "core.preloadIndex": "true",
        "index.threads": "4",
    }
    write(repo, ".gitattributes", "* filter=evil diff=evil\n")
    target = ["-f", str(repo / ".git" / "evil.inc")] if via_include else []
    for key, value in settings.items():
        git(repo, "config", *target, key, value)
    if via_include:
        # Both kinds of include: an unconditional one and one conditional on this repository's location.
        git(repo, "config", "include.path", "evil.inc")
        git(repo, "config", f"includeIf.gitdir:{repo}/.path", "evil.inc")


def malicious_repo(root: Path, markers: Path, *, via_include: bool) -> Path:
    root.mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    write(root, "first.py", "def firstPlantedFunction():\n    return 1\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one")
    write(root, "second.py", "def secondPlantedFunction():\n    return 2\n")
    git(root, "add", "second.py")
    git(root, "commit", "-q", "-m", "two")
    write(root, "untracked_third.py", "def thirdUntrackedFunction():\n    return 3\n")
    plant_commands(root, markers, via_include=via_include)
    return root


def planted_markers(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir())


def plain_git_runs_the_planted_commands(repo: Path, markers: Path, helper_bin: Path, home: Path) -> list[str]:
    """The control: the git commands indexing used to run, as a user's shell runs them."""
    env = {"PATH": f"{helper_bin}{os.pathsep}{os.environ['PATH']}", "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["rev-list", "--max-parents=0", "HEAD"], ["ls-files", "--cached", "--others", "--exclude-standard"]):
        subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, timeout=60, check=False)
    return planted_markers(markers)


@pytest.mark.parametrize("via_include", [False, True], ids=["config", "include"])
def test_indexing_never_runs_what_a_repository_configures(confined: Confined, via_include: bool) -> None:
    name = "evil-include" if via_include else "evil-config"
    markers = confined.markers / name
    markers.mkdir()
    repo = malicious_repo(confined.allowed / name, markers, via_include=via_include)
    assert planted_markers(markers) == []
    scope_id = new_scope(confined, name)
    with confined.client(MAINTAINER) as maintainer:
        r = maintainer.post(f"/v1/scopes/{scope_id}/code/index", json={"path": str(repo)})
        assert r.status_code == 200, r.text
        assert planted_markers(markers) == []
        assert r.json()["kind"] == "git"
        for function in ("firstPlantedFunction", "secondPlantedFunction", "thirdUntrackedFunction"):
            assert query_hits(maintainer, scope_id, function), function

    # In process, with the same helper on the CLI's PATH.
    db = confined.live.db_path.parent / f"{name}-inprocess.db"
    from powercontext.store.sqlite import SqliteStore

    store = SqliteStore(db)
    store.create_scope("direct", "Direct", [])
    store.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env["PATH"] = f"{confined.helper_bin}{os.pathsep}{env.get('PATH', '')}"
    done = forked.run(
        [*CLI, "code", "index", str(repo), "-s", "direct", "--db", str(db), "--json"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["files_indexed"] >= 3
    assert planted_markers(markers) == []

    # The control: the planted commands are live, plain git runs them.
    home = confined.markers.parent / f"{name}-home"
    home.mkdir()
    ran = plain_git_runs_the_planted_commands(repo, markers, confined.helper_bin, home)
    assert {"fsmonitor", "ext-transport", "uploadpack", "remote-helper"} <= set(ran), ran


# -- 3. unreadable paths are 4xx and leave nothing behind ---------------------------------------------


def test_unreadable_or_missing_paths_are_4xx_and_leave_no_tree(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    write(tree, "ok.py", "def fineFunction():\n    return 0\n")
    write(tmp_path, "plain-file.txt", "not a directory\n")
    os.mkfifo(tmp_path / "fifo")
    os.symlink(tmp_path / "loop-b", tmp_path / "loop-a")
    os.symlink(tmp_path / "loop-a", tmp_path / "loop-b")
    # A root containing the kernel file systems: they stay out all the same.
    with live_server(tmp_path, {"POWERCONTEXT_CODE_ROOTS": "/"}) as live, httpx.Client(
        base_url=live.base_url, timeout=60
    ) as http:
        assert http.post("/v1/scopes", json={"scope_id": "paths", "title": "t"}).status_code == 201
        expected = {
            "/proc": (403, "code-root-forbidden"),
            "/proc/1/cwd": (403, "code-root-forbidden"),
            "/proc/self/root": (403, "code-root-forbidden"),
            "/sys/kernel": (403, "code-root-forbidden"),
            "/dev": (403, "code-root-forbidden"),
            str(tmp_path / "missing"): (422, "invalid-code-path"),
            str(tmp_path / "plain-file.txt"): (422, "invalid-code-path"),
            str(tmp_path / "fifo"): (422, "invalid-code-path"),
            str(tmp_path / "loop-a"): (422, "invalid-code-path"),
            "relative/missing": (422, "invalid-code-path"),
        }
        for path, (status, code) in expected.items():
            r = http.post("/v1/scopes/paths/code/index", json={"path": path})
            assert (r.status_code, error_code(r)) == (status, code), (path, r.text)
            assert "Traceback" not in r.text and str(tmp_path) not in r.text
        assert code_trees(live.db_path, "paths") == 0
        ok = http.post("/v1/scopes/paths/code/index", json={"path": str(tree)})
        assert ok.status_code == 200, ok.text
        assert code_trees(live.db_path, "paths") == 1
    assert "Traceback" not in live.log_path.read_text("utf-8", errors="replace")


def test_the_cli_points_at_the_setting_when_the_server_refuses(confined: Confined) -> None:
    scope_id = new_scope(confined, "cli")
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env.update(POWERCONTEXT_URL=confined.live.base_url, POWERCONTEXT_TOKEN=INDEXER)
    r = forked.run(
        [*CLI, "code", "index", "/etc", "-s", scope_id],
        capture_output=True, text=True, env=env, timeout=60, cwd=REPO_ROOT, check=False,
    )  # fmt: skip
    assert r.returncode != 0
    assert "code-root-forbidden" in r.stderr and "POWERCONTEXT_CODE_ROOTS" in r.stderr
    assert "Traceback" not in r.stderr
