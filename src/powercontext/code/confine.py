"""Which directories may be indexed.

Indexing reads every file of a directory on the Server's machine, with the Server's permissions, and
makes what it read searchable. Two rules bound it:

* ``/proc``, ``/sys`` and ``/dev`` are never indexed, whoever asks: they hold process memory maps,
  environments and devices, not source code.
* A caller over HTTP may only index inside the directories the operator listed in
  ``POWERCONTEXT_CODE_ROOTS`` (``roots``); with none listed, nothing. The in-process CLI passes
  ``roots=None``: it may index whatever its own user can read.

The path is checked after every symlink in it is resolved, so a symlink inside a root that points
out of it is refused. Messages never carry a path or the configured roots.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from powercontext.code.errors import NEVER_INDEXED, CodeRootForbidden, InvalidCodePath

NEVER_INDEXABLE: Final = ("/proc", "/sys", "/dev")
ROOTS_VARIABLE: Final = "POWERCONTEXT_CODE_ROOTS"


def is_never_indexable(absolute: str) -> bool:
    """Whether an absolute, normalized path is ``/proc``, ``/sys``, ``/dev`` or inside one of them."""
    return any(absolute == p or absolute.startswith(p + "/") for p in NEVER_INDEXABLE)


def is_within(path: str, root: str) -> bool:
    """Whether the normalized absolute ``path`` is ``root`` or below it."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def index_root(path: Path, roots: Sequence[Path] | None) -> Path:
    """The canonical directory to index for ``path`` (relative paths resolve against the current directory).

    Raises ``CodeRootForbidden`` (a kernel file system, or outside ``roots``; ``roots=None`` allows any
    directory) before it looks at whether the path exists, so a refused caller learns nothing about
    the file system; then ``InvalidCodePath`` unless the path is a directory this process can list.
    """
    try:
        lexical = os.path.abspath(path)
    except (OSError, ValueError):  # a NUL byte, or the current directory is gone
        raise InvalidCodePath(_NOT_A_DIRECTORY) from None
    try:
        canonical: str | None = os.path.realpath(lexical, strict=True)
    except (OSError, ValueError, RuntimeError):  # missing, unreadable (e.g. /proc/1/cwd), or a symlink loop
        canonical = None
    if is_never_indexable(lexical) or (canonical is not None and is_never_indexable(canonical)):
        raise CodeRootForbidden(NEVER_INDEXED)
    if roots is not None:
        if not roots:
            raise CodeRootForbidden(
                f"this Server indexes no directory over HTTP until its operator lists some in {ROOTS_VARIABLE}"
            )
        checked = canonical if canonical is not None else lexical
        if not any(is_within(checked, _canonical(root)) for root in roots):
            raise CodeRootForbidden(f"path is outside the directories this Server may index ({ROOTS_VARIABLE})")
    if canonical is None or not os.path.isdir(canonical):
        raise InvalidCodePath(_NOT_A_DIRECTORY)
    try:
        with os.scandir(canonical):
            pass
    except OSError:
        raise InvalidCodePath(_NOT_A_DIRECTORY) from None
    return Path(canonical)


_NOT_A_DIRECTORY = "path must name an existing directory on the server that the server can read"


def _canonical(root: Path) -> str:
    try:
        return os.path.realpath(root)
    except (OSError, ValueError):  # an unresolvable root only matches itself
        return os.path.abspath(root)
