"""A hard link inside a code root names a file outside it: such files are neither indexed nor read back.

Against real Server processes whose only code root is one directory; the file the links name lies next to
that root, on the same file system. ``POWERCONTEXT_CODE_ALLOW_HARDLINKS=1`` lets an operator accept them.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import forked
from tests.code_support import write
from tests.conftest import LiveServer, live_server
from tests.support import error_code

SECRET = "OUTSIDE-HARDLINK-SECRET-5170"
OUTSIDE_TEXT = f"def leakedThroughHardLink():\n    return '{SECRET}'\n"
KEPT_TEXT = "def keptInsideTheRoot():\n    return 1\n"
CLI = [sys.executable, "-m", "powercontext"]


@dataclass
class Rooted:
    live: LiveServer
    root: Path  # the only code root
    outside: Path  # next to the root, not in it

    def http(self) -> httpx.Client:
        return httpx.Client(base_url=self.live.base_url, timeout=60)


def _rooted(base: Path, **extra: str) -> Iterator[Rooted]:
    root, outside = base / "root", base / "outside"
    root.mkdir()
    outside.mkdir()
    with live_server(base, {"POWERCONTEXT_CODE_ROOTS": str(root), **extra}) as live:
        yield Rooted(live, root, outside)


@pytest.fixture(scope="module")
def refusing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rooted]:
    yield from _rooted(tmp_path_factory.mktemp("hardlinks-default"))


@pytest.fixture(scope="module")
def allowing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rooted]:
    yield from _rooted(tmp_path_factory.mktemp("hardlinks-allowed"), POWERCONTEXT_CODE_ALLOW_HARDLINKS="1")


def new_scope(http: httpx.Client, name: str) -> str:
    scope_id = f"hl:{name}-{os.urandom(4).hex()}"
    assert http.post("/v1/scopes", json={"scope_id": scope_id, "title": name}).status_code == 201
    return scope_id


def index(http: httpx.Client, scope_id: str, tree: Path) -> dict[str, Any]:
    r = http.post(f"/v1/scopes/{scope_id}/code/index", json={"path": str(tree)})
    assert r.status_code == 200, r.text
    result: dict[str, Any] = r.json()
    return result


def query_text(http: httpx.Client, scope_id: str, query: str) -> str:
    r = http.post(f"/v1/scopes/{scope_id}/code/query", json={"query": query, "limit": 20})
    assert r.status_code == 200, r.text
    return json.dumps(r.json()["hits"])


def tree_with_a_link(rooted: Rooted, name: str) -> Path:
    """A plain directory in the root: one ordinary file, and a hard link to a file outside the root."""
    tree = rooted.root / name
    write(tree, "kept.py", KEPT_TEXT)
    target = write(rooted.outside, f"{name}-secret.py", OUTSIDE_TEXT)
    os.link(target, tree / "linked.py")
    assert (tree / "linked.py").stat().st_nlink == 2
    return tree


def snippet(http: httpx.Client, scope_id: str, fingerprint: str, path: str, text: str) -> httpx.Response:
    params = {
        "fingerprint": fingerprint,
        "path": path,
        "file_sha256": "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "start_line": 1,
        "end_line": 2,
    }
    return http.get(f"/v1/scopes/{scope_id}/code/snippet", params=params)


def swap_for_a_link(rooted: Rooted, tree: Path, name: str) -> None:
    """Replace the indexed ``name`` by a hard link to an outside file with the very same bytes (so the
    cited file_sha256 still matches: only the link count tells them apart)."""
    twin = write(rooted.outside, f"twin-of-{tree.name}-{name}", (tree / name).read_text("utf-8"))
    (tree / name).unlink()
    os.link(twin, tree / name)


def test_a_hard_link_to_a_file_outside_the_root_is_not_indexed(refusing: Rooted) -> None:
    tree = tree_with_a_link(refusing, "index-refused")
    with refusing.http() as http:
        scope_id = new_scope(http, "index")
        result = index(http, scope_id, tree)
        assert (result["files_seen"], result["files_indexed"], result["files_skipped_other"]) == (2, 1, 1)
        assert "keptInsideTheRoot" in query_text(http, scope_id, "keptInsideTheRoot")
        leaked = query_text(http, scope_id, "leakedThroughHardLink kept inside root")
        assert SECRET not in leaked and "leakedThroughHardLink" not in leaked
        refused = snippet(http, scope_id, result["fingerprint"], "linked.py", OUTSIDE_TEXT)
        assert refused.status_code == 404, refused.text  # never indexed, so never readable


def test_an_indexed_file_swapped_for_a_hard_link_answers_409(refusing: Rooted) -> None:
    tree = refusing.root / "swap-refused"
    write(tree, "kept.py", KEPT_TEXT)
    with refusing.http() as http:
        scope_id = new_scope(http, "swap")
        fingerprint = index(http, scope_id, tree)["fingerprint"]
        before = snippet(http, scope_id, fingerprint, "kept.py", KEPT_TEXT)
        assert before.status_code == 200 and before.json()["text"] == KEPT_TEXT, before.text
        swap_for_a_link(refusing, tree, "kept.py")
        after = snippet(http, scope_id, fingerprint, "kept.py", KEPT_TEXT)
        assert (after.status_code, error_code(after)) == (409, "code-changed"), after.text
        assert "keptInsideTheRoot" not in after.text
        # Re-indexing drops the file: a hard link is no longer a candidate.
        again = index(http, scope_id, tree)
        assert (again["files_removed"], again["files_skipped_other"]) == (1, 1)
        assert "keptInsideTheRoot" not in query_text(http, scope_id, "keptInsideTheRoot")


def test_the_setting_accepts_hard_links(allowing: Rooted) -> None:
    tree = tree_with_a_link(allowing, "index-allowed")
    with allowing.http() as http:
        scope_id = new_scope(http, "allowed")
        result = index(http, scope_id, tree)
        assert (result["files_indexed"], result["files_skipped_other"]) == (2, 0)
        assert SECRET in query_text(http, scope_id, "leakedThroughHardLink")
        read = snippet(http, scope_id, result["fingerprint"], "linked.py", OUTSIDE_TEXT)
        assert read.status_code == 200 and read.json()["text"] == OUTSIDE_TEXT, read.text
        swap_for_a_link(allowing, tree, "kept.py")
        swapped = snippet(http, scope_id, result["fingerprint"], "kept.py", KEPT_TEXT)
        assert swapped.status_code == 200 and swapped.json()["text"] == KEPT_TEXT, swapped.text


def test_the_cli_indexing_in_process_follows_the_same_setting(refusing: Rooted) -> None:
    tree = tree_with_a_link(refusing, "cli")
    with refusing.http() as http:
        scope_id = new_scope(http, "cli")
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    args = [*CLI, "code", "index", str(tree), "-s", scope_id, "--db", str(refusing.live.db_path), "--json"]

    def cli(**extra: str) -> dict[str, Any]:
        done = forked.run(args, capture_output=True, text=True, env={**env, **extra}, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    first = cli()
    assert (first["files_indexed"], first["files_skipped_other"]) == (1, 1)
    assert cli(POWERCONTEXT_CODE_ALLOW_HARDLINKS="1")["files_indexed"] == 1  # the link; kept.py is unchanged
