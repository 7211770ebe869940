"""Code evidence over HTTP against the real server subprocess: index, query, snippet reads."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import httpx
import pytest

from powercontext.client import PowerContextClient, PowerContextError
from tests.code_support import FIRST_RUN, SECRET_MARKER, lines_of, make_git_repo, sha256_of_file, write
from tests.conftest import LiveServer
from tests.support import Api

ERROR_KEYS = {"code", "message", "request_id"}


class CodeApi:
    """Every response body is kept, so a test can assert what never appears in any of them."""

    def __init__(self, api: Api, scope_id: str) -> None:
        self.api = api
        self.scope_id = scope_id
        self.bodies: list[str] = []

    def _keep(self, r: httpx.Response) -> httpx.Response:
        self.bodies.append(r.text)
        return r

    def index(self, path: str | Path, **extra: Any) -> httpx.Response:
        body = {"path": str(path), **extra}
        return self._keep(self.api.http.post(f"/v1/scopes/{self.scope_id}/code/index", json=body))

    def query(self, query: str, **extra: Any) -> httpx.Response:
        return self._keep(self.api.http.post(f"/v1/scopes/{self.scope_id}/code/query", json={"query": query, **extra}))

    def snippet(self, **params: Any) -> httpx.Response:
        return self._keep(self.api.http.get(f"/v1/scopes/{self.scope_id}/code/snippet", params=params))

    def read(self, evidence: dict[str, Any], **override: Any) -> httpx.Response:
        keys = ("fingerprint", "path", "file_sha256", "start_line", "end_line")
        return self.snippet(**{**{k: evidence[k] for k in keys}, **override})

    def top(self, query: str) -> dict[str, Any]:
        r = self.query(query)
        assert r.status_code == 200, r.text
        hits: list[dict[str, Any]] = r.json()["hits"]
        assert hits, f"no hit for {query!r}"
        return hits[0]


@pytest.fixture
def code(api: Api) -> CodeApi:
    return CodeApi(api, api.new_scope(prefix="code"))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_git_repo(tmp_path / "repo")


def error_of(r: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == ERROR_KEYS
    assert body["error"]["code"] == code
    error: dict[str, Any] = body["error"]
    return error


def test_index_query_and_read_exact_lines(code: CodeApi, repo: Path, tmp_path: Path) -> None:
    r = code.index(repo)
    assert r.status_code == 200, r.text
    result = r.json()
    assert {k: result[k] for k in FIRST_RUN} == FIRST_RUN
    assert result["kind"] == "git" and result["fingerprint"].startswith("git:") and result["chunks"] > 0

    r = code.query("parseHttpResponse", limit=3)
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"mode", "hits"} and body["mode"] == "code"
    assert 1 <= len(body["hits"]) <= 3
    hit = body["hits"][0]
    assert set(hit) == {"code_evidence", "language", "text", "score"}
    ev = hit["code_evidence"]
    assert (ev["scope_id"], ev["fingerprint"], ev["path"], hit["language"]) == (
        code.scope_id, result["fingerprint"], "web/client.js", "javascript",
    )  # fmt: skip
    on_disk = repo / ev["path"]
    assert ev["file_sha256"] == sha256_of_file(on_disk)
    assert hit["text"].encode() == lines_of(on_disk, ev["start_line"], ev["end_line"])
    assert ev["snippet_sha256"] == "sha256:" + hashlib.sha256(hit["text"].encode()).hexdigest()

    r = code.read(ev)
    assert r.status_code == 200, r.text
    assert r.json() == {"code_evidence": ev, "text": hit["text"]}
    partial = code.read(ev, start_line=ev["start_line"] + 1, end_line=ev["start_line"] + 1)
    assert partial.json()["text"].encode() == lines_of(on_disk, ev["start_line"] + 1, ev["start_line"] + 1)
    assert (
        partial.json()["code_evidence"]["snippet_sha256"]
        == "sha256:" + hashlib.sha256(lines_of(on_disk, ev["start_line"] + 1, ev["start_line"] + 1)).hexdigest()
    )

    assert code.top("should_retry_charge")["code_evidence"]["path"] == "src/payments/app.py"
    assert code.top("isSuspiciousTransfer")["code_evidence"]["path"] == "java/payments/FraudScreen.java"
    assert all(str(tmp_path) not in b and str(repo.resolve()) not in b for b in code.bodies)


def test_a_changed_file_is_refused_with_its_current_hash(code: CodeApi, repo: Path) -> None:
    assert code.index(repo).status_code == 200
    hit = code.top("next delay seconds")
    ev = hit["code_evidence"]
    app = repo / ev["path"]
    app.write_text(app.read_text().replace("min(2 ** attempt, 300)", "min(3 ** attempt, 600)"))
    current = sha256_of_file(app)

    err = error_of(code.read(ev), 409, "code-changed")
    assert current in err["message"] and ev["file_sha256"] not in err["message"]
    assert "600" not in err["message"]  # the hash, never the content

    again = code.index(repo).json()
    assert (again["files_indexed"], again["files_unchanged"]) == (1, FIRST_RUN["files_indexed"] - 1)
    fresh = code.top("next delay seconds")
    assert fresh["code_evidence"]["file_sha256"] == current != ev["file_sha256"]
    assert fresh["code_evidence"]["snippet_sha256"] != ev["snippet_sha256"]
    assert code.read(fresh["code_evidence"]).json()["text"] == fresh["text"]

    app.unlink()
    err = error_of(code.read(fresh["code_evidence"]), 409, "code-changed")
    assert "sha256:" not in err["message"]
    removed = code.index(repo).json()
    assert removed["files_removed"] == 1
    error_of(code.read(fresh["code_evidence"]), 404, "code-not-found")


def test_snippet_reads_only_indexed_ranges(code: CodeApi, repo: Path) -> None:
    fingerprint = code.index(repo).json()["fingerprint"]
    notes = repo / "docs/notes.txt"
    ok = {"fingerprint": fingerprint, "path": "docs/notes.txt", "file_sha256": sha256_of_file(notes)}
    assert code.snippet(**ok, start_line=1, end_line=4).json()["text"] == notes.read_text()
    error_of(code.snippet(**ok, start_line=4, end_line=5), 404, "code-not-found")  # past the last line
    error_of(code.snippet(**ok, start_line=3, end_line=2), 422, "invalid-line-range")
    error_of(
        code.snippet(**{**ok, "fingerprint": "git:0000000000000000"}, start_line=1, end_line=1), 404, "code-not-found"
    )
    # Ignored, binary, symlinked and never-indexed files exist on disk but are not readable through the API.
    for path in ("secret.env", "debug.log", "assets/logo.png", "escape_link.txt", "inner_link.py", "nope.py"):
        r = code.snippet(**{**ok, "path": path}, start_line=1, end_line=1)
        error_of(r, 404, "code-not-found")
        assert SECRET_MARKER not in r.text
    error_of(code.snippet(**ok, start_line=0, end_line=1), 422, "invalid-request")
    error_of(code.snippet(**{**ok, "file_sha256": "md5:abc"}, start_line=1, end_line=1), 422, "invalid-request")
    missing_scope = code.api.http.get(
        "/v1/scopes/no-such-scope-for-code/code/snippet", params={**ok, "start_line": 1, "end_line": 1}
    )
    error_of(missing_scope, 404, "scope-not-found")


@pytest.mark.parametrize(
    "path",
    [
        "../repo-outside.txt",
        "/etc/passwd",
        "src/../secret.env",
        "a\x00b",
        "./docs/notes.txt",
        "docs//notes.txt",
        "docs\\notes.txt",
    ],
)
def test_traversal_and_odd_paths_are_refused(code: CodeApi, repo: Path, path: str) -> None:
    fingerprint = code.index(repo).json()["fingerprint"]
    r = code.snippet(fingerprint=fingerprint, path=path, file_sha256="sha256:" + "0" * 64, start_line=1, end_line=1)
    err = error_of(r, 422, "invalid-code-path")
    assert path not in err["message"]


def test_index_refusals_never_echo_the_path(code: CodeApi, tmp_path: Path) -> None:
    write(tmp_path, "plain-file.txt", "x\n")
    for path in (tmp_path / "missing-dir", tmp_path / "plain-file.txt", f"{tmp_path}/nul\x00byte"):
        err = error_of(code.index(path), 422, "invalid-code-path")
        assert str(tmp_path) not in err["message"]
    error_of(code.index(tmp_path, max_file_bytes=0), 422, "invalid-request")
    error_of(code.index(tmp_path, max_file_bytes=17 << 20), 422, "invalid-request")
    error_of(code.index(tmp_path, extra_field=1), 422, "invalid-request")
    r = code.api.http.post("/v1/scopes/no-such-scope-for-code/code/index", json={"path": str(tmp_path)})
    error_of(r, 404, "scope-not-found")
    assert all(str(tmp_path) not in b for b in code.bodies)


def test_relative_paths_resolve_against_the_server_directory(code: CodeApi) -> None:
    # The test server runs in the repository root; this package is a subdirectory of it.
    r = code.index("src/powercontext/code")
    assert r.status_code == 200, r.text
    assert r.json()["files_indexed"] >= 5
    assert code.top("split_identifier")["code_evidence"]["path"] == "identifiers.py"


def test_plain_directory_and_several_trees_per_scope(code: CodeApi, repo: Path, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    write(plain, ".gitignore", "ignored/\n")
    write(plain, "tools/sweep.py", "def sweepStaleLedgerLocks():\n    return []\n")
    write(plain, "ignored/sweep.py", "def sweepStaleLedgerLocks():\n    return 'ignored'\n")
    first = code.index(plain).json()
    assert (first["kind"], first["files_indexed"]) == ("dir", 2)
    assert first["fingerprint"].startswith("dir:")
    assert code.index(repo).status_code == 200
    hits = code.query("sweep stale ledger locks parseHttpResponse", limit=50).json()["hits"]
    assert {h["code_evidence"]["fingerprint"] for h in hits} == {
        first["fingerprint"],
        code.index(repo).json()["fingerprint"],
    }
    assert "ignored/sweep.py" not in {h["code_evidence"]["path"] for h in hits}


def test_query_validation_and_empty_results(code: CodeApi) -> None:
    assert code.query("anything at all").json() == {"mode": "code", "hits": []}
    assert code.query("!!! ???").json()["hits"] == []
    for bad in ({"limit": 0}, {"limit": 51}, {"limit": "ten"}, {"mode": "fts"}):
        error_of(code.query("q", **bad), 422, "invalid-request")
    error_of(code.query("   "), 422, "invalid-request")
    error_of(code.query("x" * 8193), 422, "invalid-request")
    r = code.api.http.post("/v1/scopes/no-such-scope-for-code/code/query", json={"query": "q"})
    error_of(r, 404, "scope-not-found")


def test_client_methods(server: LiveServer, code: CodeApi, repo: Path) -> None:
    async def go() -> None:
        async with PowerContextClient(server.base_url) as client:
            indexed = await client.index_code(code.scope_id, str(repo), max_file_bytes=2_000_000)
            assert indexed.files_skipped_large == 0
            result = await client.query_code(code.scope_id, "checked_add_units", limit=2)
            hit = result.hits[0]
            assert hit.code_evidence.path == "crates/money/src/lib.rs"
            read = await client.read_code_evidence(hit.code_evidence)
            assert (read.code_evidence, read.text) == (hit.code_evidence, hit.text)
            (repo / hit.code_evidence.path).write_text("changed\n")
            with pytest.raises(PowerContextError) as caught:
                await client.read_code_evidence(hit.code_evidence)
            assert (caught.value.status, caught.value.code) == (409, "code-changed")

    asyncio.run(go())


def test_nothing_of_the_tree_reaches_the_log(server: LiveServer, code: CodeApi, repo: Path, tmp_path: Path) -> None:
    assert code.index(repo).status_code == 200
    code.query(f"{SECRET_MARKER} parseHttpResponse")
    hit = code.top("parseHttpResponse")
    code.read(hit["code_evidence"], path="secret.env")
    log = server.log_text()
    assert str(tmp_path) not in log and SECRET_MARKER not in log
    assert "parseHTTPResponse2" not in log
    assert "event=code.index kind=git" in log
