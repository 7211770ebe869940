"""PowerContext's ``Stop`` hook entry in a hooks file (Claude Code's ``.claude/settings.json``, Codex's
``.codex/hooks.json``): capture of the agent's final answer (``hosts.capture``). Added to, and removed from, the
same change that carries the ``UserPromptSubmit`` hook, so the file is written once."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from powercontext.hosts.adapter import HOOK_TIMEOUT_S, hook_command, is_powercontext_hook
from powercontext.hosts.files import FileChange, render_json

STOP = "Stop"


def _settings(text: str | None) -> dict[str, Any]:
    data = json.loads(text) if text else {}
    return data if isinstance(data, dict) else {}


def with_stop_hook(change: FileChange, host: str, command: str | None = None) -> FileChange:
    """``change`` (the hooks file with the prompt hook) with PowerContext's ``Stop`` entry (re)registered, running
    ``command`` (default: the portable ``powercontext hook HOST stop``)."""
    settings = _settings(change.after)
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict) or not isinstance(hooks.get(STOP, []), list):
        return change  # a file shaped otherwise keeps recall; ``hosts doctor`` reports the missing capture
    entries = [e for e in hooks.get(STOP, []) if not is_powercontext_hook(e)]
    command = command or hook_command(host, "stop")
    entries.append({"hooks": [{"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}]})
    hooks[STOP] = entries
    return replace(change, after=render_json(settings), why=change.why + " and Stop (capture of the final answer)")


def without_stop_hook(change: FileChange) -> FileChange:
    """``change`` (the hooks file without the prompt hook) without PowerContext's ``Stop`` entry either."""
    if change.after is None:
        return change
    settings = _settings(change.after)
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict) or not isinstance(hooks.get(STOP), list):
        return change
    hooks[STOP] = [e for e in hooks[STOP] if not is_powercontext_hook(e)]
    if not hooks[STOP]:
        del hooks[STOP]
    if not hooks:
        del settings["hooks"]
    return replace(change, after=render_json(settings))


def stop_handler(change: FileChange) -> tuple[int, dict[str, Any]] | None:
    """(group index, handler) of PowerContext's ``Stop`` entry in the file ``change`` writes (what Codex trusts)."""
    entries = _settings(change.after).get("hooks", {}).get(STOP, [])
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        if is_powercontext_hook(entry):
            return index, entry["hooks"][0]
    return None
