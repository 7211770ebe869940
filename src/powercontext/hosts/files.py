"""File edits that ``hosts install`` plans, shows (``--dry-run``), applies and ``hosts uninstall`` reverses.

Every change is computed first as text before/after, so a dry run prints exactly what a real run writes.
JSON files are edited as data (other keys kept); TOML files get PowerContext's own marked blocks only,
so uninstall removes exactly those lines and nothing a user wrote.

Every file is confined to a *root*: the project, or the host's (or PowerContext's own) config directory.
The repository being installed into is hostile input, so reading and writing never follow a symbolic link
at or below the root (a planted ``.claude -> ~/elsewhere`` or ``.mcp.json -> ~/.claude.json`` is refused
with an error naming it), only regular files are read, and the temporary file a write goes through is
created exclusively (``O_CREAT|O_EXCL|O_NOFOLLOW`` under a random name), so nothing planted in its place
is written through.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import secrets
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SECRET = re.compile(r'("token"\s*:\s*)"[^"]*"')
_MAX_READ_BYTES = 4 * 1024 * 1024
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class InstallError(ValueError):
    """An existing file PowerContext must edit but cannot; the message names the file and the fix."""


def confined(path: Path, root: Path) -> Path:
    """``path`` (made absolute) if it lies inside ``root`` with no symbolic link below ``root`` on the way.

    ``root`` itself may be reached through links (a home directory on another mount); each component under
    it is checked with ``lstat``. Otherwise ``InstallError`` names the offending path and what to do.
    """
    target = Path(os.path.abspath(path))
    for base in (Path(os.path.abspath(root)), Path(os.path.realpath(root))):
        if target.is_relative_to(base):
            relative = target.relative_to(base)
            break
    else:
        raise InstallError(f"{path} is outside {root}; PowerContext writes only inside it")
    current = Path(os.path.realpath(root))
    for part in relative.parts:
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            break  # nothing below a missing component exists yet, links included
        except OSError as exc:
            raise InstallError(f"{current} cannot be inspected ({exc.strerror}); fix it, then run again") from None
        if stat.S_ISLNK(mode):
            raise InstallError(
                f"{current} is a symbolic link; PowerContext never reads or writes through one (it could point "
                "outside the project). Replace it with a real file or directory, then run again"
            )
    return target


@dataclass(frozen=True)
class FileChange:
    """One file's text before and after (None: the file does not exist / is removed), confined to ``root``."""

    path: Path
    root: Path  # the project or the config directory the file must stay inside
    before: str | None
    after: str | None
    why: str
    trust: bool = False  # records the user's trust in the host's config: needs consent (or --yes)
    private: bool = False  # per-machine secrets possible: written with mode 0600
    # On removal, also remove the bytecode the host wrote for this Python plugin file (``__pycache__``).
    owns_bytecode: bool = False
    # On removal, also these directories at and above ``root`` (deepest first) while each is empty: the ones
    # install created outside the project (``machine.created_paths``), never one that existed before.
    prune_also: tuple[Path, ...] = ()

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def action(self) -> str:
        return "remove" if self.after is None else ("create" if self.before is None else "update")

    def diff(self) -> str:
        """A unified diff of the change (what ``--dry-run`` prints)."""
        lines = difflib.unified_diff(
            (self.before or "").splitlines(keepends=True),
            (self.after or "").splitlines(keepends=True),
            fromfile=str(self.path) if self.before is not None else "/dev/null",
            tofile=str(self.path) if self.after is not None else "/dev/null",
        )
        text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
        return _SECRET.sub(r'\1"<redacted>"', text) if self.private else text


def edit(
    path: Path, root: Path, after: str | None, why: str, *, trust: bool = False, private: bool = False
) -> FileChange:
    """The change that makes ``path`` hold ``after``, with its current text (read safely) as ``before``."""
    return FileChange(path, root, read_text(path, root), after, why, trust=trust, private=private)


def read_text(path: Path, root: Path) -> str | None:
    """The UTF-8 text of ``path`` inside ``root`` (None if absent). A symbolic link, a path outside ``root``,
    anything but a regular file, or more than 4 MiB is refused with ``InstallError``."""
    confined(path, root)
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InstallError(f"{path} cannot be read ({exc.strerror}); fix or move it, then run again") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise InstallError(f"{path} is not a regular file; move it, then run again")
        raw = handle.read(_MAX_READ_BYTES + 1)
    if len(raw) > _MAX_READ_BYTES:
        raise InstallError(f"{path} is larger than 4 MiB; PowerContext will not edit it")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InstallError(f"{path} cannot be read as UTF-8 text; fix or move it, then run again") from None


def _make_dirs(directory: Path, root: Path) -> None:
    """Create ``directory`` under ``root`` one component at a time, refusing links (``confined`` first)."""
    confined(directory, root)
    # The root itself (a host's config directory the user named, say a fresh $DSH_HOME) may not exist yet.
    os.makedirs(root, 0o755, exist_ok=True)
    missing: list[Path] = []
    current = Path(os.path.abspath(directory))
    while not current.exists():
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o755)
        confined(path, root)  # raced by a link: refuse before writing below it


def _remove_bytecode(removed: Path, root: Path) -> None:
    """The bytecode a host wrote for a removed ``.py`` plugin file (``__pycache__/<stem>.*.pyc``), and that
    ``__pycache__`` when nothing else is in it."""
    cache = removed.parent / "__pycache__"
    if removed.suffix != ".py" or not confined(cache, root).is_dir() or cache.is_symlink():
        return
    for entry in os.scandir(cache):
        is_ours = entry.name.startswith(f"{removed.stem}.") and entry.name.endswith(".pyc")
        if is_ours and entry.is_file(follow_symlinks=False):
            os.unlink(entry.path)
    with contextlib.suppress(OSError):
        os.rmdir(cache)  # only when empty


def _prune_empty_dirs(directory: Path, root: Path) -> None:
    """Remove ``directory`` and its parents while they are empty, up to (never including) ``root``: install
    creates the directories its files need, so uninstall leaves none of them behind empty."""
    stop = Path(os.path.abspath(root))
    current = Path(os.path.abspath(directory))
    while current != stop and current.is_relative_to(stop):
        try:
            os.rmdir(confined(current, root))  # only when empty; a link is refused by confined
        except OSError:
            return
        current = current.parent


def apply_change(change: FileChange) -> None:
    """Write (atomically, via an exclusively created temporary file in the same directory) or remove one file."""
    if not change.changed:
        return
    confined(change.path, change.root)
    if change.after is None:
        change.path.unlink(missing_ok=True)  # unlink removes a link itself, never its target
        if change.owns_bytecode:
            _remove_bytecode(change.path, change.root)
        _prune_empty_dirs(change.path.parent, change.root)
        for directory in change.prune_also:
            try:
                os.rmdir(directory)  # only when empty; never follows a link (a link is not a directory)
            except OSError:
                break
        return
    _make_dirs(change.path.parent, change.root)
    tmp = change.path.with_name(f".{change.path.name}.powercontext-{secrets.token_hex(8)}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW
    fd = os.open(tmp, flags, 0o600 if change.private else 0o644)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(change.after)
        os.replace(tmp, change.path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# -- JSON ------------------------------------------------------------------------------------------


def parse_json_object(path: Path, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise InstallError(f"{path} is not valid JSON; fix or move it, then run install again") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} must hold a JSON object")
    return data


def render_json(data: dict[str, Any]) -> str | None:
    """The file text for ``data``; None when nothing is left (the file is removed)."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n" if data else None


def prune_empty(data: dict[str, Any], *keys: str) -> None:
    """Drop ``data[k]`` for each key whose value became an empty object or list."""
    for key in keys:
        if key in data and data[key] in ({}, []):
            del data[key]


# -- TOML blocks -----------------------------------------------------------------------------------


def toml_string(value: str) -> str:
    """A TOML basic string (JSON's escapes are a subset TOML accepts when non-ASCII stays literal)."""
    return json.dumps(value, ensure_ascii=False)


def _markers(block_id: str) -> tuple[str, str]:
    return f"# BEGIN powercontext {block_id}", f"# END powercontext {block_id}"


def without_block(text: str, block_id: str) -> str:
    """``text`` without PowerContext's block ``block_id`` (and the blank line install put before it)."""
    begin, end = _markers(block_id)
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    skipping = False
    for line in lines:
        stripped = line.rstrip("\r\n")
        if stripped == begin:
            skipping = True
            if out and out[-1].strip() == "":
                out.pop()
            continue
        if skipping:
            skipping = stripped != end
            continue
        out.append(line)
    return "".join(out)


def with_block(text: str | None, block_id: str, body: list[str]) -> str:
    """``text`` with PowerContext's block ``block_id`` (replaced if present) holding ``body`` lines, at the end."""
    rest = without_block(text or "", block_id)
    if rest and not rest.endswith("\n"):
        rest += "\n"
    begin, end = _markers(block_id)
    return rest + ("\n" if rest else "") + "\n".join([begin, *body, end]) + "\n"


def parse_toml(path: Path, text: str | None) -> dict[str, Any]:
    try:
        return tomllib.loads(text or "")
    except tomllib.TOMLDecodeError:
        raise InstallError(f"{path} is not valid TOML; fix or move it, then run again") from None
