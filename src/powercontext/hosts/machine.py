"""Per-machine hook settings for one project: the Server URL, token and interpreter ``hosts install`` recorded.

Committed host files name only the Scope and run ``powercontext`` from ``PATH``; what differs per
machine lives outside the repository, in ``$XDG_CONFIG_HOME/powercontext/hosts.json`` (mode 0600)::

    {"projects": {"/abs/project": {"url": "http://127.0.0.1:8765", "token": "...", "python": "/abs/python"}}}

The hook and ``powercontext mcp`` read ``url``/``token`` only when ``POWERCONTEXT_URL`` /
``POWERCONTEXT_TOKEN`` are unset. ``python`` is the interpreter that ran ``hosts install``: the plugins of
extension-style hosts run the hook with it when ``POWERCONTEXT_PYTHON`` is unset, so the hook works after the
README's install even though ``powercontext`` is only in ``.venv/bin``. A repository can never set these.
A top-level ``"created"`` list names the files and directories outside any project that install created, so
uninstall removes them when they are left empty and nothing that existed before (``created_paths``); a
top-level ``"originals"`` map keeps, per project JSON file install rewrote, its text before and after install,
so uninstall gives the user's bytes back (``recorded_originals``).

The hook-style hosts (Claude Code, Codex, WorkBuddy) run a command, not a plugin: when ``powercontext`` is not on
the ``PATH`` install ran with (``machine_hook_needed``), install also writes a per-machine hook entry that names
that interpreter (``python -m powercontext.hosts.hook HOST``) in the host's per-machine config, never in a
committed file. The committed entry (``powercontext hook HOST``) then defers to it (``machine_hook_python``) so
one prompt runs the hook once, whichever of the two the host finds.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MACHINE_FILE = "hosts.json"
_MAX_BYTES = 256 * 1024


def machine_config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "powercontext" / MACHINE_FILE


def _load(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            raw = handle.read(_MAX_BYTES + 1)
        data = json.loads(raw) if len(raw) <= _MAX_BYTES else {}
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def project_settings(project: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``url``/``token`` recorded for ``project`` (strings only; anything else is ignored)."""
    projects = _load(machine_config_path(env)).get("projects")
    entry = projects.get(str(project)) if isinstance(projects, dict) else None
    if not isinstance(entry, dict):
        return {}
    return {k: v for k, v in entry.items() if k in ("url", "token", "python") and isinstance(v, str) and v.strip()}


def recorded_projects(env: Mapping[str, str] | None = None) -> list[Path]:
    """Every project ``hosts install`` recorded on this machine (an entry stays while any host is installed)."""
    projects = _load(machine_config_path(env)).get("projects")
    if not isinstance(projects, dict):
        return []
    return [Path(p) for p in projects if isinstance(p, str) and Path(p).is_absolute()]


def created_paths(env: Mapping[str, str] | None = None) -> set[str]:
    """The files and directories outside any project that ``hosts install`` created on this machine (absolute
    paths): uninstall removes one of them when it is left empty, and never anything that existed before."""
    return _created_in(_load(machine_config_path(env)))


def _created_in(data: dict[str, Any]) -> set[str]:
    created = data.get("created")
    return {p for p in created if isinstance(p, str)} if isinstance(created, list) else set()


def recorded_originals(env: Mapping[str, str] | None = None) -> dict[str, tuple[str, str]]:
    """For each project JSON file install rewrote: (its text before install, the text install wrote). Uninstall
    puts the first back, byte for byte, while the file still holds the second."""
    return _originals_in(_load(machine_config_path(env)))


def _originals_in(data: dict[str, Any]) -> dict[str, tuple[str, str]]:
    found = data.get("originals")
    return {
        path: (pair[0], pair[1])
        for path, pair in (found.items() if isinstance(found, dict) else ())
        if isinstance(pair, list) and len(pair) == 2 and all(isinstance(text, str) for text in pair)
    }


def render_with(
    path: Path,
    project: Path,
    entry: dict[str, str] | None,
    created: set[str] | None = None,
    originals: dict[str, tuple[str, str]] | None = None,
) -> str | None:
    """The file's text with ``project``'s entry set (or removed when ``entry`` is None), ``created`` added to
    the paths install created and ``originals`` to the files it rewrote; None: no file needed. With no project
    left, nothing PowerContext put anywhere remains, so those records go too."""
    data = _load(path)
    projects = data.get("projects")
    projects = dict(projects) if isinstance(projects, dict) else {}
    if entry:
        projects[str(project)] = entry
    else:
        projects.pop(str(project), None)
    listed = {*_created_in(data), *(created or ())} if projects else set()
    data.pop("created", None)
    if listed:
        data["created"] = sorted(listed)
    kept = {**_originals_in(data), **(originals or {})} if projects else {}
    data.pop("originals", None)
    if kept and len(json.dumps(kept)) <= _MAX_BYTES // 4:  # never crowd out the settings themselves
        data["originals"] = {p: list(pair) for p, pair in sorted(kept.items())}
    if not projects and set(data) <= {"projects"}:
        return None
    data["projects"] = projects
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _shebang_interpreter(script: str) -> str | None:
    try:
        with open(script, encoding="utf-8", errors="replace") as handle:
            first = handle.readline(4096)
    except OSError:
        return None
    interpreter = first[2:].strip() if first.startswith("#!") else ""
    if not interpreter or any(c.isspace() for c in interpreter) or not Path(interpreter).is_file():
        return None
    return interpreter


def hook_interpreter(project: Path, env: Mapping[str, str] | None = None) -> str | None:
    """The interpreter a host plugin runs the hook with (the same rule as ``assets/recall_runner.*``):
    ``POWERCONTEXT_PYTHON``, else the one ``hosts install`` recorded for ``project``, else the ``#!`` line of
    ``powercontext`` on ``PATH``."""
    env = os.environ if env is None else env
    explicit = env.get("POWERCONTEXT_PYTHON", "").strip()
    if explicit:
        return explicit
    recorded = project_settings(project, env).get("python")
    if recorded and Path(recorded).is_file():
        return recorded
    import shutil  # not at module level: the per-prompt hook imports this module (shutil brings bz2, lzma, ...)

    script = shutil.which("powercontext", path=env.get("PATH"))
    return _shebang_interpreter(script) if script else None


def this_checkout() -> Path | None:
    """The clone this PowerContext runs from (an editable install), or None for an installed wheel."""
    package = Path(__file__).resolve().parents[1]  # .../src/powercontext
    clone = package.parents[1]
    return clone if (clone / "pyproject.toml").is_file() and (package.parent.name == "src") else None


def install_this_checkout() -> str:
    """The command that puts *this* PowerContext's ``powercontext`` on PATH. Never a PyPI name: the
    ``powercontext`` on PyPI is an unrelated project."""
    clone = this_checkout()
    where = str(clone) if clone is not None else "<your powercontext clone>"
    return f"pipx install -e {where}   (or: uv tool install -e {where})"


def machine_hook_needed(env: Mapping[str, str] | None = None) -> bool:
    """Whether the hook-style hosts need a per-machine entry naming the interpreter: ``powercontext`` is not on
    ``PATH``, or is there only through an activated virtualenv (a host started from another shell would not
    find it)."""
    import shutil

    env = os.environ if env is None else env
    found = shutil.which("powercontext", path=env.get("PATH"))
    if found is None:
        return True
    venv = env.get("VIRTUAL_ENV", "").strip()
    return bool(venv) and Path(os.path.abspath(found)).is_relative_to(os.path.abspath(venv))


_MACHINE_HOOK_FILES = {"claude-code": ".claude/settings.local.json", "workbuddy": ".codebuddy/settings.local.json"}
_EVENT_KEYS = {None: "UserPromptSubmit", "stop": "Stop"}


def machine_hooks_file(host: str) -> str | None:
    """The project-relative, per-machine (git-ignored) settings file where install writes ``host``'s hook entry
    naming the interpreter, for the hosts that read one."""
    return _MACHINE_HOOK_FILES.get(host)


def parse_machine_command(command: str, host: str, event: str | None = None) -> str | None:
    """The interpreter of a per-machine hook command (``'<python>' -m powercontext.hosts.hook HOST [EVENT]``)."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return None
    expected = ["-m", "powercontext.hosts.hook", host, *([event] if event else [])]
    return words[0] if len(words) == len(expected) + 1 and words[1:] == expected else None


def machine_hook_python(project: Path, host: str, event: str | None = None) -> str | None:
    """The interpreter of the per-machine entry for ``host``'s ``event`` in ``project``, when one is registered
    and that interpreter exists: the entry the host will run, so the committed one stands down.

    Read as hostile input: a linked file or directory, or anything but a small regular file, counts as none."""
    relative = machine_hooks_file(host)
    if relative is None:
        return None
    path = project / relative
    try:
        if os.path.realpath(path.parent) != os.path.join(os.path.realpath(project), os.path.dirname(relative)):
            return None
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            import stat

            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            settings = json.loads(handle.read(_MAX_BYTES + 1)[:_MAX_BYTES])
    except (OSError, ValueError, RecursionError):
        return None
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    entries = hooks.get(_EVENT_KEYS.get(event, ""), []) if isinstance(hooks, dict) else []
    for entry in entries if isinstance(entries, list) else []:
        for handler in entry.get("hooks", []) if isinstance(entry, dict) else []:
            command = handler.get("command") if isinstance(handler, dict) else None
            python = parse_machine_command(command, host, event) if isinstance(command, str) else None
            if python and Path(python).is_file():
                return python
    return None
