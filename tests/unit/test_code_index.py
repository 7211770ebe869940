"""Indexing a real git repository into SQLite, incrementally, and querying it with ``CodeSearch``."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import pytest

from powercontext.code.errors import InvalidCodePath
from powercontext.code.indexer import CodeIndexer, IndexReport
from powercontext.search.code import CodeHit, CodeSearch
from powercontext.store.code import CodeStore, NewCodeFile
from powercontext.store.errors import CodeNotFound, ScopeNotFound
from powercontext.store.sqlite import SqliteStore
from tests.code_support import FIRST_RUN, INDEXED, SECRET_MARKER, lines_of, make_git_repo, sha256_of_file, write


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    s = SqliteStore(tmp_path / "code.db")
    s.create_scope("s", "title", [])
    return s


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_git_repo(tmp_path / "repo")


def counts(report: IndexReport) -> dict[str, int]:
    return {k: getattr(report, k) for k in FIRST_RUN}


def top(store: SqliteStore, query: str, limit: int = 5) -> list[CodeHit]:
    return CodeSearch(store).query("s", query, limit)


def test_first_run_counts_and_evidence(store: SqliteStore, repo: Path) -> None:
    report = CodeIndexer(store).index("s", repo)
    assert counts(report) == FIRST_RUN
    assert report.files_seen == sum(v for k, v in FIRST_RUN.items() if k not in ("files_seen", "files_removed"))
    assert report.kind == "git" and report.fingerprint.startswith("git:")
    assert set(store.code_file_hashes("s", report.fingerprint)) == INDEXED
    assert report.chunks >= len(INDEXED)
    for hit in top(store, "parse webhook payload retry charge ledger", 50):
        on_disk = repo / hit.path
        assert hit.file_sha256 == sha256_of_file(on_disk)
        assert hit.text.encode() == lines_of(on_disk, hit.start_line, hit.end_line)
        assert hit.snippet_sha256 == "sha256:" + hashlib.sha256(hit.text.encode()).hexdigest()


@pytest.mark.parametrize(
    ("query", "path"),
    [
        ("parseHttpResponse", "web/client.js"),  # camelCase query, camelCase code
        ("parse_http_response2", "web/client.js"),  # snake_case query finds parseHTTPResponse2
        ("should retry charge", "src/payments/app.py"),  # words find shouldRetryCharge
        ("next_delay_seconds", "src/payments/app.py"),
        ("parsing webhook payloads", "src/payments/app.py"),  # stems
        ("checkedAddUnits", "crates/money/src/lib.rs"),
        ("is suspicious transfer", "java/payments/FraudScreen.java"),
        ("run nightly", "cmd/reconcile/main.go"),
        ("reconcile", "cmd/reconcile/main.go"),  # a path component
        ("SettlementWindow", "web/types.ts"),
        ("untrackedHelperFunction", "src/payments/untracked_helper.py"),
        ("chargeback disputes", "docs/notes.txt"),
    ],
)
def test_queries_find_identifiers(store: SqliteStore, repo: Path, query: str, path: str) -> None:
    CodeIndexer(store).index("s", repo)
    hits = top(store, query)
    assert hits and hits[0].path == path, [(h.path, h.score) for h in hits]
    assert hits == sorted(hits, key=lambda h: -h.score)


def test_ignored_binary_large_and_linked_files_are_not_searchable(store: SqliteStore, repo: Path) -> None:
    CodeIndexer(store).index("s", repo)
    assert not any(SECRET_MARKER in h.text for h in top(store, SECRET_MARKER, 50))
    assert top(store, SECRET_MARKER.rsplit("-", 1)[1]) == []  # its number is in ignored files only
    assert top(store, "xxxxxxxxx") == []  # big.txt's only word
    assert "inner_link.py" not in {h.path for h in top(store, "parse webhook payload", 50)}


def test_reindex_is_incremental(store: SqliteStore, repo: Path) -> None:
    indexer = CodeIndexer(store)
    first = indexer.index("s", repo)
    before = {h.path: h for h in top(store, "retry charge delay", 50)}
    again = indexer.index("s", repo)
    assert counts(again) == {**FIRST_RUN, "files_indexed": 0, "files_unchanged": len(INDEXED)}
    assert (again.fingerprint, again.chunks) == (first.fingerprint, first.chunks)

    app = repo / "src/payments/app.py"
    app.write_text(app.read_text().replace("return status >= 500", "return status in (502, 503, 504)"))
    (repo / "docs/notes.txt").unlink()
    write(repo, "web/types.ts", b"binary now\x00")
    write(repo, "src/payments/refunds.py", "def issueRefundNow(amount):\n    return amount\n")
    third = indexer.index("s", repo)
    assert counts(third) == {
        "files_seen": FIRST_RUN["files_seen"],  # one deleted, one added
        "files_indexed": 2,
        "files_unchanged": len(INDEXED) - 3,
        "files_removed": 2,  # notes.txt is gone, types.ts is binary now
        "files_skipped_binary": 3,
        "files_skipped_large": 1,
        "files_skipped_other": 2,
    }
    assert top(store, "chargeback disputes") == []
    assert "web/types.ts" not in {h.path for h in top(store, "SettlementWindow")}
    assert top(store, "issue refund now")[0].path == "src/payments/refunds.py"
    after = top(store, "should retry charge")[0]
    assert after.path == "src/payments/app.py"
    assert after.file_sha256 == sha256_of_file(app) != before["src/payments/app.py"].file_sha256
    assert after.text.encode() == lines_of(app, after.start_line, after.end_line)
    assert "502, 503, 504" in after.text


def test_max_file_bytes_is_per_request(store: SqliteStore, repo: Path) -> None:
    report = CodeIndexer(store).index("s", repo, max_file_bytes=2_000_000)
    assert report.files_skipped_large == 0  # big.txt fits now ...
    assert report.files_indexed == len(INDEXED) + 1
    small = CodeIndexer(store).index("s", repo, max_file_bytes=300)
    assert small.files_skipped_large > 1  # ... and most files are too big at 300 bytes
    assert small.files_removed == small.files_skipped_large  # every one of them had been indexed


def test_progress_reports_every_file(store: SqliteStore, repo: Path) -> None:
    calls: list[tuple[int, int]] = []
    report = CodeIndexer(store).index("s", repo, progress=lambda done, total: calls.append((done, total)))
    total = report.files_seen
    assert calls == [(i, total) for i in range(1, total + 1)]


class FailingStore:
    """A real store whose ``put_code_files`` fails on its n-th call."""

    def __init__(self, inner: SqliteStore, fail_on: int) -> None:
        self.inner = inner
        self.fail_on = fail_on
        self.puts = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def put_code_files(self, scope_id: str, fingerprint: str, files: Sequence[NewCodeFile]) -> None:
        self.puts += 1
        if self.puts == self.fail_on:
            raise RuntimeError("disk full")
        self.inner.put_code_files(scope_id, fingerprint, files)


def test_a_failed_run_keeps_every_file_at_its_old_or_new_state(store: SqliteStore, repo: Path) -> None:
    first = CodeIndexer(store).index("s", repo)
    old = store.code_file_hashes("s", first.fingerprint)
    for path in INDEXED - {".gitignore"}:
        target = repo / path
        target.write_bytes(target.read_bytes() + b"\n// edited\n")
    (repo / "docs/notes.txt").unlink()
    failing = FailingStore(store, fail_on=2)
    indexer = CodeIndexer(failing, batch_files=3)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        indexer.index("s", repo)
    mid = store.code_file_hashes("s", first.fingerprint)
    assert set(mid) == set(old), "nothing is removed by a failed run"
    for path, digest in mid.items():
        assert digest in (old[path], sha256_of_file(repo / path) if (repo / path).exists() else old[path])
    assert sum(mid[p] != old[p] for p in mid) == 3  # exactly the first batch landed
    done = CodeIndexer(store).index("s", repo)
    assert done.files_removed == 1
    assert store.code_file_hashes("s", first.fingerprint) == {
        p: sha256_of_file(repo / p) for p in INDEXED - {"docs/notes.txt"}
    }


def test_a_failed_first_run_leaves_no_tree_behind(store: SqliteStore, repo: Path) -> None:
    failing = FailingStore(store, fail_on=2)
    with pytest.raises(RuntimeError):
        CodeIndexer(failing, batch_files=3).index("s", repo)  # type: ignore[arg-type]
    assert failing.puts == 2  # the first batch had landed before the failure
    assert not store.has_code_trees("s")
    assert top(store, "parse webhook payload retry charge ledger", 50) == []
    report = CodeIndexer(store).index("s", repo)
    assert counts(report) == FIRST_RUN
    with pytest.raises(CodeNotFound):
        store.get_code_tree("s", "git:not-a-tree")
    store.forget_code_tree("s", "git:not-a-tree")  # nothing to forget: no error
    assert store.has_code_trees("s")


def test_small_batches_give_the_same_index(store: SqliteStore, repo: Path, tmp_path: Path) -> None:
    other = SqliteStore(tmp_path / "other.db")
    other.create_scope("s", "title", [])
    a = CodeIndexer(store).index("s", repo)
    b = CodeIndexer(other, batch_files=1).index("s", repo)
    assert a == b
    query = "parse response retry ledger"
    assert [(h.path, h.start_line, h.snippet_sha256) for h in CodeSearch(store).query("s", query, 50)] == [
        (h.path, h.start_line, h.snippet_sha256) for h in CodeSearch(other).query("s", query, 50)
    ]


def test_scopes_index_independently(store: SqliteStore, repo: Path) -> None:
    store.create_scope("t", "title", [])
    CodeIndexer(store).index("s", repo)
    assert CodeSearch(store).query("t", "parseHttpResponse", 5) == []
    with pytest.raises(ScopeNotFound):
        CodeIndexer(store).index("missing", repo)
    with pytest.raises(InvalidCodePath):
        CodeIndexer(store).index("s", repo / "nope")


def test_plain_directory_and_empty_files(store: SqliteStore, tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write(root, ".gitignore", "*.tmp\n")
    write(root, "empty.py", "")
    write(root, "lib/util.go", "package lib\n\nfunc HashLedgerRow() {}\n")
    write(root, "junk.tmp", "HashLedgerRow\n")
    report = CodeIndexer(store).index("s", root)
    assert report.kind == "dir" and report.fingerprint.startswith("dir:")
    assert (report.files_seen, report.files_indexed, report.chunks) == (3, 3, 2)
    (hit,) = CodeSearch(store).query("s", "hash ledger row", 5)
    assert (hit.path, hit.language, hit.start_line, hit.end_line) == ("lib/util.go", "go", 1, 3)


def test_code_store_protocol_is_implemented() -> None:
    assert issubclass(SqliteStore, CodeStore)
