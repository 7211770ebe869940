"""File discovery (git and plain directories), ignore rules, path rules and fingerprints."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from powercontext.code.discovery import list_files, open_work_tree
from powercontext.code.errors import CodeTreeTooLarge, InvalidCodePath
from powercontext.code.fingerprint import fingerprint
from powercontext.code.ignore import IgnoreRules
from powercontext.code.paths import ReadOutcome, is_valid_relative_path, read_tree_file
from tests.code_support import INDEXED, git, make_git_repo, root_commit, write

# -- ignore rules --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "ignored"),
    [
        ("*.log", "debug.log", False, True),
        ("*.log", "a/b/debug.log", False, True),
        ("*.log", "debug.log.txt", False, False),
        ("build/", "build", True, True),
        ("build/", "build", False, False),
        ("build/", "src/build", True, True),
        ("/build", "src/build", True, False),
        ("/build", "build", False, True),
        ("doc/*.txt", "doc/a.txt", False, True),
        ("doc/*.txt", "doc/x/a.txt", False, False),
        ("doc/*.txt", "x/doc/a.txt", False, False),
        ("**/cache", "a/b/cache", True, True),
        ("**/cache", "cache", True, True),
        ("logs/**", "logs/a/b.txt", False, True),
        ("a/**/z", "a/z", False, True),
        ("a/**/z", "a/b/c/z", False, True),
        ("file?.py", "file1.py", False, True),
        ("file?.py", "file10.py", False, False),
        ("[ab].py", "a.py", False, True),
        ("[!ab].py", "a.py", False, False),
        ("[!ab].py", "c.py", False, True),
        ("\\#keep", "#keep", False, True),
        ("# comment", "# comment", False, False),
    ],
)
def test_ignore_patterns(pattern: str, path: str, is_dir: bool, ignored: bool) -> None:
    assert IgnoreRules(pattern).ignored(path, is_dir) is ignored


def test_negation_last_match_wins() -> None:
    rules = IgnoreRules("*.env\n!example.env\n\n# a comment\n")
    assert rules.ignored("prod.env", False)
    assert not rules.ignored("example.env", False)
    assert not IgnoreRules("")


# -- paths -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["", "/etc/passwd", "../x", "a/../../x", "a//b", "./a", "a/.", "a\\b", "a\x00b", "a\nb", "x" * 1025, "\udcff.py"],
)
def test_invalid_relative_paths(path: str) -> None:
    assert not is_valid_relative_path(path)


@pytest.mark.parametrize("path", ["a.py", "src/a b.py", "..hidden/x", "a..b", "数据/文件.py", ".gitignore"])
def test_valid_relative_paths(path: str) -> None:
    assert is_valid_relative_path(path)


def test_read_tree_file_never_leaves_the_tree(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write(root, "a.txt", "inside\n")
    write(tmp_path, "outside.txt", "outside\n")
    (root / "sub").mkdir()
    os.symlink(tmp_path / "outside.txt", root / "out.txt")
    os.symlink(tmp_path, root / "sub" / "up")
    os.symlink("a.txt", root / "in.txt")
    os.mkfifo(root / "pipe")
    real = root.resolve()
    assert read_tree_file(real, "a.txt", 100).data == b"inside\n"
    assert read_tree_file(real, "out.txt", 100).outcome is ReadOutcome.NOT_REGULAR
    assert read_tree_file(real, "sub/up/outside.txt", 100).outcome is ReadOutcome.NOT_REGULAR
    assert read_tree_file(real, "in.txt", 100).outcome is ReadOutcome.NOT_REGULAR  # symlinks are never read
    assert read_tree_file(real, "pipe", 100).outcome is ReadOutcome.NOT_REGULAR  # and a FIFO never blocks
    assert read_tree_file(real, "missing.txt", 100).outcome is ReadOutcome.MISSING
    assert read_tree_file(real, "a.txt", 3).outcome is ReadOutcome.TOO_LARGE


# -- discovery -------------------------------------------------------------------------------------


def test_git_listing_honours_gitignore_and_counts_untracked(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "repo")
    tree = open_work_tree(repo)
    assert tree.kind == "git"
    assert tree.root == repo.resolve()
    assert tree.root_commit == root_commit(repo)
    files = list_files(tree)
    assert files == sorted(files)
    assert set(files) >= INDEXED
    assert {"assets/logo.png", "data/big.txt", "escape_link.txt", "inner_link.py"} <= set(files)
    assert not {"debug.log", "build/generated.py", "secret.env"} & set(files)


def test_git_listing_skips_deleted_and_vendored_files(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "repo")
    (repo / "docs" / "notes.txt").unlink()  # tracked, deleted from the work tree: the indexer skips it
    write(repo, ".venv/lib/site.py", "x = 1\n")  # nobody ignored it; still not source
    write(repo, "node_modules/pkg/index.js", "x\n")
    files = list_files(open_work_tree(repo))
    assert not [f for f in files if f.startswith((".venv/", "node_modules/"))]


@pytest.mark.parametrize("kind", ["git", "dir"])
def test_lock_files_are_not_candidates(tmp_path: Path, kind: str) -> None:
    # Generated, and the largest text of many repositories: twelve of a query's sixteen code candidates were
    # package-lock.json chunks before.
    repo = make_git_repo(tmp_path / "repo") if kind == "git" else tmp_path / "plain"
    for name in ("package-lock.json", "web/yarn.lock", "Cargo.lock", "tools/poetry.lock", "go.sum"):
        write(repo, name, "{}\n")
    write(repo, "web/lockfile.py", "x = 1\n")  # a name that merely resembles one stays
    tree = open_work_tree(repo)
    assert tree.kind == kind
    files = list_files(tree)
    assert "web/lockfile.py" in files
    assert not {"package-lock.json", "web/yarn.lock", "Cargo.lock", "tools/poetry.lock", "go.sum"} & set(files)


def test_a_subdirectory_of_a_repository_lists_relative_paths(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "repo")
    tree = open_work_tree(repo / "web")
    assert (tree.kind, tree.prefix) == ("git", "web")
    assert list_files(tree) == ["client.js", "types.ts"]
    assert fingerprint("s", tree) != fingerprint("s", open_work_tree(repo))


def test_plain_directory_walk(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write(root, ".gitignore", "*.log\n/dist/\nsecrets/\n!keep.log\n")
    write(root, "a.py", "x = 1\n")
    write(root, "pkg/b.py", "y = 2\n")
    write(root, "pkg/debug.log", "no\n")
    write(root, "keep.log", "yes\n")
    write(root, "dist/bundle.js", "no\n")
    write(root, "pkg/dist/kept.js", "anchored pattern: this one stays\n")
    write(root, "secrets/key.txt", "no\n")
    write(root, ".git/config", "no\n")
    write(root, "node_modules/x/index.js", "no\n")
    write(root, "__pycache__/a.pyc", "no\n")
    write(tmp_path, "elsewhere/far.py", "no\n")
    os.symlink(tmp_path / "elsewhere", root / "linked_dir")
    tree = open_work_tree(root)
    assert tree.kind == "dir" and tree.root_commit is None
    assert list_files(tree) == [".gitignore", "a.py", "keep.log", "pkg/b.py", "pkg/dist/kept.js"]


def test_too_many_files_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "many"
    for i in range(6):
        write(root, f"f{i}.txt", "x\n")
    assert len(list_files(open_work_tree(root), max_files=6)) == 6
    with pytest.raises(CodeTreeTooLarge):
        list_files(open_work_tree(root), max_files=5)


@pytest.mark.parametrize("kind", ["missing", "file", "nul"])
def test_a_path_that_is_not_a_directory_is_refused(tmp_path: Path, kind: str) -> None:
    write(tmp_path, "file.txt", "x\n")
    path = {"missing": tmp_path / "nope", "file": tmp_path / "file.txt", "nul": Path(f"{tmp_path}/a\0b")}[kind]
    with pytest.raises(InvalidCodePath) as caught:
        open_work_tree(path)
    assert str(tmp_path) not in str(caught.value)


# -- fingerprints ----------------------------------------------------------------------------------


def test_git_fingerprint_is_the_root_commit_and_survives_clones(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "repo")
    expected = "git:" + hashlib.sha256(root_commit(repo).encode()).hexdigest()[:16]
    assert fingerprint("scope-a", open_work_tree(repo)) == expected
    assert fingerprint("scope-b", open_work_tree(repo)) == expected
    write(repo, "new.py", "z = 3\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "second")
    assert fingerprint("scope-a", open_work_tree(repo)) == expected
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True, capture_output=True)
    assert fingerprint("scope-a", open_work_tree(clone)) == expected


def test_dir_fingerprint_is_scope_and_path(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    tree = open_work_tree(root)
    seed = f"scope-a\0{root.resolve()}".encode()
    assert fingerprint("scope-a", tree) == "dir:" + hashlib.sha256(seed).hexdigest()[:16]
    assert fingerprint("scope-b", tree) != fingerprint("scope-a", tree)
    empty_repo = tmp_path / "unborn"
    empty_repo.mkdir()
    git(empty_repo, "init", "-q")
    unborn = open_work_tree(empty_repo)
    assert unborn.kind == "git" and unborn.root_commit is None
    assert fingerprint("scope-a", unborn).startswith("dir:")


def test_without_git_a_repository_is_walked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_git_repo(tmp_path / "repo")
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs-here"))  # no git on PATH
    tree = open_work_tree(repo)
    assert tree.kind == "dir"
    files = list_files(tree)
    assert "src/payments/app.py" in files and "debug.log" not in files and "build/generated.py" not in files
