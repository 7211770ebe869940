"""Which Scope a hook recalls from, for a working directory.

Resolution order (first match wins):

1. ``POWERCONTEXT_SCOPE`` in the hook's environment: an explicit binding.
2. ``scope_id`` in a ``.powercontext.toml`` found in the working directory or a parent, up to and
   including the repository root (the first directory holding ``.git``).
3. A default from the repository's ``origin`` remote (else its first remote), read from
   ``.git/config`` as a plain file: ``repo:<host>/<path>``, lower-cased, without credentials, port,
   scheme or a trailing ``.git``. ``git@github.com:Acme/Pay.git`` → ``repo:github.com/acme/pay``.
4. Else the repository root's (or the working directory's) name: ``dir:<name>``.

Git is never run: a repository's own config can name programs git would execute.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from collections.abc import Mapping

CONFIG_FILE = ".powercontext.toml"
SCOPE_ENV = "POWERCONTEXT_SCOPE"
MAX_SCOPE_CHARS = 256
_MAX_CONFIG_BYTES = 64 * 1024
CONFIG_KEYS = ("scope_id", "max_bytes", "capture")  # every other key is refused (load_config)


class ScopeConfigError(ValueError):
    """A ``.powercontext.toml`` that cannot be used; the message names the file's problem, not its content."""


class RepoConfig(NamedTuple):
    """What a ``.powercontext.toml`` may set. A repository cannot choose the Server URL or token."""

    path: Path
    scope_id: str | None
    max_bytes: int | None
    capture: bool | None = None  # ``capture = false`` turns capture off for the repository
    # Keys the file may not hold (a typo, or a key of a newer PowerContext): each turns capture off, since it may
    # be a misspelt ``capture = false``; recall still uses the keys known here.
    unknown: tuple[str, ...] = ()


class ScopeResolution(NamedTuple):
    scope_id: str
    source: str  # "env" | "config" | "git-remote" | "directory"
    config: RepoConfig | None


def find_repo_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` that holds ``.git`` (a directory, or a worktree's file)."""
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return None


def find_config(start: Path, repo_root: Path | None) -> Path | None:
    """The nearest ``.powercontext.toml`` from ``start`` up to the repository root (or the filesystem root)."""
    for directory in (start, *start.parents):
        candidate = directory / CONFIG_FILE
        if candidate.is_file():
            return candidate
        if repo_root is not None and directory == repo_root:
            return None
    return None


def load_config(path: Path) -> RepoConfig:
    try:
        raw = path.read_bytes()[: _MAX_CONFIG_BYTES + 1]
        if len(raw) > _MAX_CONFIG_BYTES:
            raise ScopeConfigError(f"{CONFIG_FILE} is larger than 64 KiB")
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScopeConfigError(f"{CONFIG_FILE} cannot be read as TOML ({type(exc).__name__})") from None
    data = _simple_toml(text)
    if data is None:
        import tomllib

        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ScopeConfigError(f"{CONFIG_FILE} cannot be read as TOML ({type(exc).__name__})") from None
    unknown = tuple(key for key in data if key not in CONFIG_KEYS)
    scope_id = data.get("scope_id")
    if scope_id is not None and (not isinstance(scope_id, str) or not _valid_scope(scope_id)):
        raise ScopeConfigError(f"{CONFIG_FILE}: scope_id must be a non-blank string of at most 256 characters")
    max_bytes = data.get("max_bytes")
    if max_bytes is not None and (type(max_bytes) is not int or not 512 <= max_bytes <= 32768):
        raise ScopeConfigError(f"{CONFIG_FILE}: max_bytes must be an integer from 512 to 32768")
    capture = data.get("capture")
    if capture is not None and not isinstance(capture, bool):
        raise ScopeConfigError(f"{CONFIG_FILE}: capture must be true or false")
    return RepoConfig(path, scope_id, max_bytes, False if unknown else capture, unknown)


def unknown_key_message(key: str) -> str:
    """What ``hosts doctor`` says of a key the file may not hold, with the nearest known one."""
    import difflib

    near = difflib.get_close_matches(key.strip().lower(), CONFIG_KEYS, n=1, cutoff=0.6)
    hint = f"did you mean {near[0]!r}?" if near else f"it may set only {', '.join(CONFIG_KEYS)}"
    shown = key if len(key) <= 40 else key[:40] + "…"
    return f"{CONFIG_FILE}: unknown key {shown!r}; {hint}"


# One line of the TOML subset ``hosts install`` writes: a bare key = a basic string without escapes, or a
# decimal integer; an optional comment. (Character classes follow the TOML 1.0 grammar.)
_SIMPLE_LINE = re.compile(
    r"[ \t]*(?:(?P<key>[A-Za-z0-9_-]+)[ \t]*=[ \t]*"
    r'(?:"(?P<text>[^"\\\x00-\x08\x0a-\x1f\x7f]*)"|(?P<int>[+-]?(?:0|[1-9][0-9]*)))[ \t]*)?'
    r"(?:#[^\x00-\x08\x0a-\x1f\x7f]*)?"
)


def _simple_toml(text: str) -> dict[str, str | int] | None:
    """``text`` parsed when every line is in the simple subset (the common case), else None for ``tomllib``.

    ``tomllib`` costs a hook process ~6 ms of imports (``datetime``, its regexes); for this subset both
    parsers agree, and anything else (tables, escapes, dotted or repeated keys, floats…) goes to ``tomllib``.
    """
    data: dict[str, str | int] = {}
    for line in text.replace("\r\n", "\n").split("\n"):
        match = _SIMPLE_LINE.fullmatch(line)
        if match is None:
            return None
        key = match.group("key")
        if key is None:
            continue
        if key in data:
            return None
        number = match.group("int")
        data[key] = match.group("text") if number is None else int(number)
    return data


def _valid_scope(value: str) -> bool:
    return 1 <= len(value) <= MAX_SCOPE_CHARS and bool(value.strip())


def git_config_path(repo_root: Path) -> Path | None:
    """``.git/config``, following a worktree's ``gitdir:`` file and its ``commondir``."""
    dot_git = repo_root / ".git"
    if dot_git.is_dir():
        git_dir = dot_git
    else:
        try:
            line = dot_git.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return None
        if not line.startswith("gitdir:"):
            return None
        git_dir = Path(line.removeprefix("gitdir:").strip())
        if not git_dir.is_absolute():
            git_dir = (repo_root / git_dir).resolve()
    commondir = git_dir / "commondir"
    if commondir.is_file():
        try:
            common = Path(commondir.read_text(encoding="utf-8").strip())
        except (OSError, UnicodeDecodeError):
            return None
        git_dir = common if common.is_absolute() else (git_dir / common).resolve()
    config = git_dir / "config"
    return config if config.is_file() else None


# Patterns, not compiled at import: only a project without a configured Scope needs them (``re`` caches).
_SECTION = r'^\s*\[\s*remote\s+"(?P<name>[^"]*)"\s*\]\s*$'
_OTHER_SECTION = r"^\s*\["
_URL = r"(?i)^\s*url\s*=\s*(?P<url>.+?)\s*$"


def remote_urls(config_text: str) -> dict[str, str]:
    """``{remote name: url}`` from git config text (the first ``url`` of each remote)."""
    urls: dict[str, str] = {}
    current: str | None = None
    for line in config_text.splitlines():
        section = re.match(_SECTION, line)
        if section:
            current = section.group("name")
            continue
        if re.match(_OTHER_SECTION, line):
            current = None
            continue
        match = re.match(_URL, line)
        if current is not None and match and current not in urls:
            urls[current] = match.group("url").strip('"')
    return urls


def scope_from_remote(url: str) -> str | None:
    """``repo:<host>/<path>`` for a remote URL, with credentials, port and ``.git`` removed; None if unusable."""
    url = url.strip()
    scp = re.match(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>(?!//).+)$", url)
    if "://" in url:
        parts = urlsplit(url)
        host, path = (parts.hostname or ""), parts.path
    elif scp:
        host, path = scp.group("host"), scp.group("path")
    else:
        return None  # a local path: no stable identity to share
    path = path.strip("/").removesuffix(".git").strip("/")
    if not host or not path:
        return None
    scope_id = f"repo:{host.lower()}/{path.lower()}"
    return scope_id if _valid_scope(scope_id) else None


def resolve_scope(cwd: Path, env: Mapping[str, str] | None = None) -> ScopeResolution:
    """The Scope for a hook running in ``cwd`` (see the module docstring for the order)."""
    env = os.environ if env is None else env
    repo_root = find_repo_root(cwd)
    config_path = find_config(cwd, repo_root)
    config = load_config(config_path) if config_path is not None else None
    explicit = env.get(SCOPE_ENV, "").strip()
    if explicit:
        if not _valid_scope(explicit):
            raise ScopeConfigError(f"{SCOPE_ENV} must be at most 256 characters")
        return ScopeResolution(explicit, "env", config)
    if config is not None and config.scope_id is not None:
        return ScopeResolution(config.scope_id, "config", config)
    if repo_root is not None:
        git_config = git_config_path(repo_root)
        if git_config is not None:
            try:
                urls = remote_urls(git_config.read_text(encoding="utf-8", errors="replace"))
            except OSError:
                urls = {}
            url = urls.get("origin") or next(iter(urls.values()), None)
            scope_id = scope_from_remote(url) if url else None
            if scope_id is not None:
                return ScopeResolution(scope_id, "git-remote", config)
    name = (repo_root or cwd).name or "root"
    return ScopeResolution(f"dir:{name}"[:MAX_SCOPE_CHARS], "directory", config)
