"""Which files of a work tree are candidates for indexing.

* A **git work tree** (``git rev-parse --show-toplevel`` succeeds) lists
  ``git ls-files -z --cached --others --exclude-standard``: tracked files plus untracked files that
  are not ignored, so the repository's ignore rules (nested ``.gitignore``, ``.git/info/exclude``) are
  honoured, and a new file counts before its first commit. Tracked files deleted from the work tree
  are not candidates. Run from a subdirectory of a repository, only that subdirectory is listed, with
  paths relative to it. git runs without the system and global configuration and with every setting
  that names a command overridden (see ``_git``): a repository's own configuration is not trusted.
* A **plain directory** is walked: a top-level ``.gitignore`` is honoured (see ``ignore``), symlinked
  directories are not entered, and the walk never crosses into another file system (``/proc`` and
  friends cannot be reached from ``/``).

Both skip ``SKIPPED_DIRS`` at any depth (a ``.venv`` nobody ignored is still not source) and package managers'
``LOCK_FILES``, and fail with ``CodeTreeTooLarge`` past ``max_files`` candidates.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from powercontext.code.confine import index_root
from powercontext.code.errors import CodeTreeTooLarge
from powercontext.code.ignore import IgnoreRules

MAX_FILES: Final = 100_000
GIT_TIMEOUT_S: Final = 120.0
SKIPPED_DIRS: Final = frozenset(
    {".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache",
     ".ruff_cache", ".tox", ".nox", ".hypothesis"}
)  # fmt: skip

# Package managers' lock files: generated, often the largest text in a repository, and never what a question
# about the code means (a query for "chunk_lines" drew twelve package-lock.json chunks among sixteen candidates).
LOCK_FILES: Final = frozenset(
    {"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb", "Cargo.lock",
     "poetry.lock", "Pipfile.lock", "uv.lock", "pdm.lock", "Gemfile.lock", "composer.lock", "go.sum",
     "packages.lock.json", "pubspec.lock", "mix.lock", "flake.lock"}
)  # fmt: skip

TreeKind = Literal["git", "dir"]


def _candidate(path: str) -> bool:
    """Not under a skipped directory and not a lock file (``path`` is ``/``-separated)."""
    parts = path.split("/")
    return parts[-1] not in LOCK_FILES and not SKIPPED_DIRS.intersection(parts[:-1])


@dataclass(frozen=True, slots=True)
class WorkTree:
    """A directory to index. ``root`` is absolute and canonical (symlinks resolved)."""

    root: Path
    kind: TreeKind
    root_commit: str | None  # the smallest root commit id of HEAD's history; None without commits
    prefix: str  # ``root`` relative to the git top level ("" at the top, and for plain directories)


def open_work_tree(path: Path, roots: Sequence[Path] | None = None) -> WorkTree:
    """Resolve ``path`` (relative to the current directory) and find out what kind of tree it is.

    Raises ``CodeRootForbidden`` and ``InvalidCodePath`` as ``confine.index_root`` does: ``roots`` are
    the directories it must lie in (``None``: any directory but ``/proc``, ``/sys`` and ``/dev``).
    """
    root = index_root(path, roots)
    toplevel = _git(root, "rev-parse", "--show-toplevel")
    if toplevel is None:
        return WorkTree(root, "dir", None, "")
    try:
        top = Path(os.fsdecode(toplevel.rstrip(b"\n"))).resolve()
    except (OSError, ValueError, RuntimeError):  # a core.worktree that cannot be resolved
        return WorkTree(root, "dir", None, "")
    prefix = root.relative_to(top).as_posix() if root != top and root.is_relative_to(top) else ""
    root_commits = _git(root, "rev-list", "--max-parents=0", "HEAD")
    commits = sorted(root_commits.decode("ascii", "replace").split()) if root_commits else []
    return WorkTree(root, "git", commits[0] if commits else None, "" if prefix == "." else prefix)


def list_files(tree: WorkTree, max_files: int = MAX_FILES) -> list[str]:
    """Candidate paths, ``/``-separated and relative to the root, sorted. Names that are not valid
    file-system strings come back with surrogate escapes; the indexer skips them."""
    if tree.kind == "git":
        listed = _git(tree.root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
        if listed is not None:
            names = {os.fsdecode(n) for n in listed.split(b"\0") if n and not n.endswith(b"/")}
            paths = sorted(p for p in names if _candidate(p))
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
            if name not in LOCK_FILES and not rules.ignored(prefix + name, False):
                found.append(prefix + name)
                if len(found) > max_files:
                    raise CodeTreeTooLarge(max_files)
    return sorted(found)


def _root_ignore_rules(root: Path) -> IgnoreRules:
    try:
        return IgnoreRules((root / ".gitignore").read_text("utf-8", errors="replace"))
    except OSError:
        return IgnoreRules("")


# Settings a repository's configuration could use to make git run a command, each pinned on the command
# line (command-line configuration wins over the repository's, includes too). Only plumbing that never
# diffs, filters, pages or edits runs (rev-parse, rev-list, ls-files), so diff.external, textconv,
# clean/smudge filters, editors and gpg are never consulted; the pins below cover what those three can
# reach: the fsmonitor hook (run when the index is read), hooks (run if the index were written), the
# pager, credential helpers, and ssh for a partial clone's lazy fetch of a missing commit.
_SAFETY_CONFIG: Final = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.sshCommand=false",
    "core.askPass=",
    "credential.helper=",
    "core.untrackedCache=false",
    "protocol.allow=never",
)
# Environment variables passed to git; everything else (GIT_DIR, GIT_CONFIG_*, GIT_SSH, PAGER, HOME...)
# is dropped, so only the tree decides.
_KEPT_ENV: Final = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT")


def git_environment() -> dict[str, str]:
    """The environment git runs with: no system or global configuration (``HOME`` and ``XDG_CONFIG_HOME``
    are ``/dev/null``, under which no file can exist, so no user-level config, excludes or attributes are
    read), no transport at all (a lazy fetch would run ``remote.*.uploadpack``, ``ext::`` commands or ssh),
    and no optional locks (a read-only listing must not write the index, which would run hooks)."""
    env = {k: os.environ[k] for k in _KEPT_ENV if k in os.environ}
    env.update(
        HOME=os.devnull,
        XDG_CONFIG_HOME=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_ATTR_NOSYSTEM="1",
        # An allow-list naming no transport (a "/" can be in no transport or remote-helper name): it
        # overrides any protocol.<name>.allow of the repository.
        GIT_ALLOW_PROTOCOL="no/transport",
        GIT_NO_LAZY_FETCH="1",  # git 2.44+; older versions are held by GIT_ALLOW_PROTOCOL alone
        GIT_OPTIONAL_LOCKS="0",
        GIT_TERMINAL_PROMPT="0",
        GIT_PAGER="cat",
        PAGER="cat",
    )
    return env


def _git(cwd: Path, *args: str) -> bytes | None:
    """Run git in ``cwd``; its stdout, or ``None`` on any failure (no git, not a work tree, no commits)."""
    git = shutil.which("git")
    if git is None:
        return None
    overrides = [arg for setting in _SAFETY_CONFIG for arg in ("-c", setting)]
    command = [git, "--no-pager", "--no-optional-locks", *overrides, *args]
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            env=git_environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None
