"""Per-machine hook entries: the hook runs after the README's install, with ``powercontext`` only in ``.venv/bin``.

A committed hook entry runs ``powercontext hook HOST`` from ``PATH`` so every teammate's machine can use it. On
a machine where ``powercontext`` is not on ``PATH`` (``machine.machine_hook_needed``), ``hosts install`` also
writes an entry that names the interpreter that ran it, ``'<python>' -m powercontext.hosts.hook HOST``, in the
host's per-machine, git-ignored project settings file (Claude Code's ``.claude/settings.local.json``,
WorkBuddy's ``.codebuddy/settings.local.json``), and removes it again when a later install finds ``powercontext``
on ``PATH``. The host merges both files and runs both entries; the committed one stands down when the
per-machine one is registered (``machine.machine_hook_python``), so a prompt is recalled (and captured) once.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from powercontext.hosts.adapter import (
    Check,
    HooksFile,
    command_check,
    machine_hook_command,
    with_hook,
    without_hook,
)
from powercontext.hosts.files import FileChange, parse_json_object, read_text, render_json
from powercontext.hosts.machine import (
    install_this_checkout,
    machine_hook_needed,
    machine_hook_python,
    machine_hooks_file,
)
from powercontext.hosts.stop_hook import with_stop_hook, without_stop_hook

_PROBE_TIMEOUT_S = 10.0


def machine_hooks(project: Path, host: str) -> HooksFile:
    """The host's per-machine project settings file (``machine.machine_hooks_file``)."""
    relative = machine_hooks_file(host)
    if relative is None:
        raise ValueError(f"{host} has no per-machine project settings file")
    return HooksFile(project / relative, project)


def machine_hooks_change(
    project: Path, host: str, env: Mapping[str, str], *, stop: bool = False, remove: bool = False
) -> FileChange:
    """The per-machine settings file with PowerContext's entries (``UserPromptSubmit``, and ``Stop`` when ``stop``)
    naming this interpreter when the host would not find ``powercontext`` on ``PATH``; without them otherwise, or
    when ``remove`` (uninstall). Every other key and entry in the file stays."""
    hooks = machine_hooks(project, host)
    before = read_text(hooks.path, hooks.root)
    settings = parse_json_object(hooks.path, before)
    without_hook(settings)
    wanted = machine_hook_needed(env) and not remove
    if wanted:
        with_hook(hooks.path, settings, host, machine_hook_command(host))
    python = sys.executable
    why = f"this machine's hook: {python} runs it (`powercontext` is not on PATH)" if wanted else "no machine hook"
    change = FileChange(hooks.path, hooks.root, before, render_json(settings), why)
    if stop:
        change = without_stop_hook(change)
        if wanted:
            change = with_stop_hook(change, host, machine_hook_command(host, "stop"))
    return change


def settings_after(change: FileChange) -> dict[str, Any]:
    """The JSON object a planned change leaves in its file (what the next change to the same file starts from)."""
    return parse_json_object(change.path, change.after)


def rerun_install_fix(host: str) -> str:
    """What makes the hook run again: record a working interpreter for this machine, or put this checkout (never
    the unrelated ``powercontext`` on PyPI) on ``PATH``."""
    here = Path(sys.executable).parent / "powercontext"
    again = f"{here} hosts install {host} --yes" if here.is_file() else f"powercontext hosts install {host} --yes"
    return f"{again}   (records this machine's interpreter), or put this checkout on PATH: {install_this_checkout()}"


def interpreter_check(name: str, python: str, where: Path) -> Check:
    """Whether the recorded interpreter still imports the hook (a deleted venv, an uninstalled package)."""
    try:
        done = subprocess.run(
            [python, "-c", "import powercontext.hosts.hook"],
            capture_output=True,
            timeout=_PROBE_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
        works = done.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        works = False
    if not works:
        return Check(name, "fail", f"{python} (recorded in {where}) cannot import powercontext", None)
    return Check(name, "ok", f"{python} -m powercontext.hosts.hook (this machine's entry in {where})")


def hook_runner_check(host: str, project: Path, handler: dict[str, Any], env: Mapping[str, str]) -> Check:
    """``HOST-hook-command``: what will run the hook on this machine, the per-machine entry's interpreter if one
    is registered, else the committed command from ``PATH``; a failure says how to fix it."""
    name = f"{host}-hook-command"
    fix = rerun_install_fix(host)
    python = machine_hook_python(project, host)
    if python is not None:
        check = interpreter_check(name, python, machine_hooks(project, host).path)
        return check if check.status == "ok" else Check(check.name, check.status, check.detail, fix)
    return command_check(name, str(handler.get("command", "")), env, fix)
