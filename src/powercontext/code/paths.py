"""Repository-relative paths: validation, and reading a file of a tree without leaving it."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Final

from powercontext.code.confine import is_never_indexable
from powercontext.fd_read import read_at_most

MAX_PATH_CHARS: Final = 1024


def is_valid_relative_path(path: str) -> bool:
    """A ``/``-separated path inside a tree: not empty, not absolute, no ``.``/``..``/empty component,
    no backslash, no control character, valid UTF-8, at most ``MAX_PATH_CHARS`` characters."""
    if not path or len(path) > MAX_PATH_CHARS or path.startswith("/") or "\\" in path:
        return False
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
        return False
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: a file name that is not UTF-8
        return False
    return all(part not in ("", ".", "..") for part in path.split("/"))


def inside(root: Path, relative: str) -> Path | None:
    """``root / relative`` when it stays inside ``root`` (absolute and canonical) once every symlink is
    resolved, and out of ``/proc``, ``/sys`` and ``/dev``; ``None`` when it escapes or cannot be resolved.
    ``relative`` must be valid (``is_valid_relative_path``)."""
    full = root / relative
    try:
        real = os.path.realpath(full)
    except (OSError, ValueError):  # e.g. a symlink whose target may not be read, like /proc/1/cwd
        return None
    if not real.startswith(str(root).rstrip("/") + "/") or is_never_indexable(real):
        return None
    return full


class ReadOutcome(Enum):
    OK = "ok"
    MISSING = "missing"
    NOT_REGULAR = "not-regular"  # a symlink, a special file, or a path that leaves the tree
    HARD_LINKED = "hard-linked"  # a file with more than one name: one of them may lie outside the tree
    TOO_LARGE = "too-large"
    UNREADABLE = "unreadable"


@dataclass(frozen=True, slots=True)
class FileRead:
    outcome: ReadOutcome
    data: bytes = b""


def read_tree_file(root: Path, relative: str, max_bytes: int, *, allow_hardlinks: bool = False) -> FileRead:
    """The bytes of one regular file of the tree, at most ``max_bytes`` of them.

    Never reads through a symlink out of the tree, and never through a symlink at all in the last
    component; never opens a FIFO or device; never reads more than ``max_bytes + 1`` bytes. Unless
    ``allow_hardlinks``, never reads a file with more than one hard link: a hard link is indistinguishable
    from the file it names, which may lie outside the tree (``HARD_LINKED``). The checks run on the opened
    file itself, so a file swapped between the check and the read is still the one checked.
    """
    full = inside(root, relative)
    if full is None:
        return FileRead(ReadOutcome.NOT_REGULAR)
    try:
        fd = os.open(full, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return FileRead(ReadOutcome.MISSING)
    except OSError as exc:
        symlink = exc.errno == errno.ELOOP
        return FileRead(ReadOutcome.NOT_REGULAR if symlink else ReadOutcome.UNREADABLE)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return FileRead(ReadOutcome.NOT_REGULAR)
        if info.st_nlink > 1 and not allow_hardlinks:
            return FileRead(ReadOutcome.HARD_LINKED)
        if info.st_size > max_bytes:
            return FileRead(ReadOutcome.TOO_LARGE)
        data = read_at_most(fd, max_bytes)
    except OSError:
        return FileRead(ReadOutcome.UNREADABLE)
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # it grew after fstat
        return FileRead(ReadOutcome.TOO_LARGE)
    return FileRead(ReadOutcome.OK, data)
