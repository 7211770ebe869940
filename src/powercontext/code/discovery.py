"""Which files of a work tree are candidates for indexing.

* A **git work tree** (``git rev-parse --show-toplevel`` succeeds) lists
  ``git ls-files -z --cached --others --exclude-standard``: tracked files plus untracked files that
  are not ignored, so every ignore rule git knows (nested ``.gitignore``, ``.git/info/exclude``,
  global excludes) is honoured, and a new file counts before its first commit. Tracked files deleted
  from the work tree are not candidates. Run from a subdirectory of a repository, only that
  subdirectory is listed, with paths relative to it.
* A **plain directory** is walked: a top-level ``.gitignore`` is honoured (see ``ignore``), symlinked
  directories are not entered, and the walk never crosses into another file system (``/proc`` and
  friends cannot be reached from ``/``).

Both skip ``SKIPPED_DIRS`` at any depth (a ``.venv`` nobody ignored is still not source) and fail with
``CodeTreeTooLarge`` past ``max_files`` candidates.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from powercontext.code.errors import CodeTreeTooLarge, InvalidCodePath
from powercontext.code.ignore import IgnoreRules

MAX_FILES: Final = 100_000
GIT_TIMEOUT_S: Final = 120.0
SKIPPED_DIRS: Final = frozenset(
    {".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache",
     ".ruff_cache", ".tox", ".nox", ".hypothesis"}
)  # fmt: skip

TreeKind = Literal["git", "dir"]


@dataclass(frozen=True, slots=True)
class WorkTree:
    """A directory to index. ``root`` is absolute and canonical (symlinks resolved)."""

    root: Path
    kind: TreeKind
    root_commit: str | None  # the smallest root commit id of HEAD's history; None without commits
    prefix: str  # ``root`` relative to the git top level ("" at the top, and for plain directories)


def open_work_tree(path: Path) -> WorkTree:
    """Resolve ``path`` (relative to the current directory) and find out what kind of tree it is."""
    try:
        root = path.resolve(strict=True)
        is_dir = root.is_dir()
    except (OSError, ValueError, RuntimeError):  # missing, NUL or unencodable, or a symlink loop
        is_dir = False
    if not is_dir:
        raise InvalidCodePath("path must name an existing directory on the server")
    toplevel = _git(root, "rev-parse", "--show-toplevel")
    if toplevel is None:
        return WorkTree(root, "dir", None, "")
    top = Path(os.fsdecode(toplevel.rstrip(b"\n"))).resolve()
    prefix = root.relative_to(top).as_posix() if root != top and root.is_relative_to(top) else ""
    roots = _git(root, "rev-list", "--max-parents=0", "HEAD")
    commits = sorted(roots.decode("ascii", "replace").split()) if roots else []
    return WorkTree(root, "git", commits[0] if commits else None, "" if prefix == "." else prefix)


def list_files(tree: WorkTree, max_files: int = MAX_FILES) -> list[str]:
    """Candidate paths, ``/``-separated and relative to the root, sorted. Names that are not valid
    file-system strings come back with surrogate escapes; the indexer skips them."""
    if tree.kind == "git":
        listed = _git(tree.root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
        if listed is not None:
            names = {os.fsdecode(n) for n in listed.split(b"\0") if n and not n.endswith(b"/")}
            paths = sorted(p for p in names if not SKIPPED_DIRS.intersection(p.split("/")[:-1]))
            if len(paths) > max_files:
                raise CodeTreeTooLarge(max_files)
            return paths
    return _walk(tree.root, max_files)


def _walk(root: Path, max_files: int) -> list[str]:
    rules = _root_ignore_rules(root)
    device = root.stat().st_dev
    found: list[str] = []
    for current, dirnames, filenames in os.walk(root):
        base = Path(current)
        rel_dir = base.relative_to(root).as_posix()
        prefix = "" if rel_dir == "." else rel_dir + "/"
        kept = []
        for name in dirnames:
            child = base / name
            if name in SKIPPED_DIRS or rules.ignored(prefix + name, True):
                continue
            try:
                if child.is_symlink() or child.stat().st_dev != device:
                    continue
            except OSError:
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in filenames:
            if not rules.ignored(prefix + name, False):
                found.append(prefix + name)
                if len(found) > max_files:
                    raise CodeTreeTooLarge(max_files)
    return sorted(found)


def _root_ignore_rules(root: Path) -> IgnoreRules:
    try:
        return IgnoreRules((root / ".gitignore").read_text("utf-8", errors="replace"))
    except OSError:
        return IgnoreRules("")


def _git(cwd: Path, *args: str) -> bytes | None:
    """Run git in ``cwd``; its stdout, or ``None`` on any failure (no git, not a work tree, no commits)."""
    git = shutil.which("git")
    if git is None:
        return None
    # Only the tree decides: inherited GIT_DIR/GIT_WORK_TREE/GIT_INDEX_FILE would point git elsewhere,
    # and optional locks would make a read-only listing write the index.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_TERMINAL_PROMPT"] = "0"
    try:
        done = subprocess.run([git, *args], cwd=cwd, env=env, capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None
