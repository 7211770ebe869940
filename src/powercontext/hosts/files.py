"""File edits that ``hosts install`` plans, shows (``--dry-run``), applies and ``hosts uninstall`` reverses.

Every change is computed first as text before/after, so a dry run prints exactly what a real run writes.
JSON files are edited as data (other keys kept); TOML files get PowerContext's own marked blocks only,
so uninstall removes exactly those lines and nothing a user wrote.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SECRET = re.compile(r'("token"\s*:\s*)"[^"]*"')


class InstallError(ValueError):
    """An existing file PowerContext must edit but cannot; the message names the file and the fix."""


@dataclass(frozen=True)
class FileChange:
    """One file's text before and after (None: the file does not exist / is removed)."""

    path: Path
    before: str | None
    after: str | None
    why: str
    trust: bool = False  # records the user's trust in the host's config: needs consent (or --yes)
    private: bool = False  # per-machine secrets possible: written with mode 0600

    @property
    def changed(self) -> bool:
        return self.before != self.after

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


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        raise InstallError(f"{path} cannot be read as UTF-8 text; fix or move it, then run again") from None


def apply_change(change: FileChange) -> None:
    """Write (atomically, via a temporary file in the same directory) or remove one file."""
    if not change.changed:
        return
    if change.after is None:
        change.path.unlink(missing_ok=True)
        return
    change.path.parent.mkdir(parents=True, exist_ok=True)
    tmp = change.path.with_name(change.path.name + ".powercontext-tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if change.private else 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(change.after)
    tmp.replace(change.path)


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
