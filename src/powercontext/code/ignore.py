"""A top-level ``.gitignore``, for directories that are not git work trees.

Supported, as git documents them: blank lines and ``#`` comments, ``\\`` escapes, ``!`` negation (the
last matching pattern wins), a trailing ``/`` for directories only, a ``/`` at the start or in the
middle anchoring the pattern at the root (otherwise it matches a name at any depth), ``*``, ``?``,
``[...]`` classes and ``**`` (leading ``**/``, trailing ``/**``, inner ``/**/``). Not supported:
nested ``.gitignore`` files, ``.git/info/exclude`` and global excludes; a git work tree gets all of
those from git itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class _Pattern:
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool


class IgnoreRules:
    """Compiled ``.gitignore`` patterns; ``ignored(path, is_dir)`` answers for a root-relative path."""

    def __init__(self, text: str) -> None:
        self._patterns = [p for p in (_compile(line) for line in text.splitlines()) if p is not None]

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` (``/``-separated, relative to the root) is ignored; the last match decides."""
        result = False
        for pattern in self._patterns:
            if pattern.dir_only and not is_dir:
                continue
            if pattern.regex.fullmatch(path):
                result = not pattern.negated
        return result


def _strip_trailing_spaces(line: str) -> str:
    # Trailing spaces are ignored unless the last one is escaped with a backslash.
    stripped = line.rstrip(" ")
    if stripped.endswith("\\") and len(stripped) < len(line):
        return stripped + " "
    return stripped


def _compile(raw: str) -> _Pattern | None:
    line = _strip_trailing_spaces(raw.rstrip("\r"))
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated or line.startswith(("\\!", "\\#")):  # "\\!" and "\\#" escape a literal first character
        line = line[1:]
    dir_only = line.endswith("/") and not line.endswith("\\/")
    if dir_only:
        line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    body = _translate(line)
    regex = body if anchored or line.startswith("**/") else "(?:.*/)?" + body
    return _Pattern(re.compile(regex, re.DOTALL), negated, dir_only)


def _translate(glob: str) -> str:
    """Glob → regex over ``/``-separated paths (``*`` and ``?`` never match ``/``)."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if glob.startswith("**", i) and (i == 0 or glob[i - 1] == "/"):
            after = i + 2
            if after == n:  # "dir/**": everything inside
                out.append(".*")
                i = after
                continue
            if glob[after] == "/":  # "**/" leading or "/**/" inner: zero or more directories
                out.append("(?:.*/)?")
                i = after + 1
                continue
        if c == "*":
            out.append("[^/]*")
            while i + 1 < n and glob[i + 1] == "*":  # other runs of stars are a plain "*"
                i += 1
        elif c == "?":
            out.append("[^/]")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        elif c == "[":
            end = glob.find("]", i + 2 if glob[i + 1 : i + 2] in ("!", "^", "]") else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                inner = glob[i + 1 : end]
                if inner.startswith("!"):
                    inner = "^" + inner[1:]
                out.append("[" + inner.replace("\\", "\\\\") + "]")
                i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)
