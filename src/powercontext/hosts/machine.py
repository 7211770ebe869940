"""Per-machine hook settings for one project: the Server URL and token ``hosts install`` recorded.

Committed host files name only the Scope and run ``powercontext`` from ``PATH``; what differs per
machine lives outside the repository, in ``$XDG_CONFIG_HOME/powercontext/hosts.json`` (mode 0600)::

    {"projects": {"/abs/project": {"url": "http://127.0.0.1:8765", "token": "..."}}}

The hook and ``powercontext mcp`` read it only when ``POWERCONTEXT_URL`` / ``POWERCONTEXT_TOKEN`` are
unset. A repository can never set these (it could send your token elsewhere).
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
    return {k: v for k, v in entry.items() if k in ("url", "token") and isinstance(v, str) and v.strip()}


def render_with(path: Path, project: Path, entry: dict[str, str] | None) -> str | None:
    """The file's text with ``project``'s entry set (or removed when ``entry`` is None); None: no file needed."""
    data = _load(path)
    projects = data.get("projects")
    projects = dict(projects) if isinstance(projects, dict) else {}
    if entry:
        projects[str(project)] = entry
    else:
        projects.pop(str(project), None)
    if not projects and set(data) <= {"projects"}:
        return None
    data["projects"] = projects
    return json.dumps(data, indent=2, sort_keys=True) + "\n"
