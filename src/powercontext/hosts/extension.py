"""What the extension-style hosts share: a plugin file that runs the PowerContext hook, and its doctor checks.

OpenCode, Pi, DSH, Hermes and Bub load a plugin rather than run a command: install writes that plugin (a
shipped asset from ``powercontext/hosts/assets``) and the plugin runs ``python -m powercontext.hosts.hook
HOST`` within the hook budget. Every file written here is portable: it names no interpreter, venv, URL or
token, so a team can commit it; the machine's own PowerContext is found at run time (``POWERCONTEXT_PYTHON``,
else the interpreter ``hosts install`` recorded for the project on this machine, else ``powercontext`` on
``PATH``: ``machine.hook_interpreter``).
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.resources import files
from pathlib import Path

from powercontext.hosts.adapter import Check, HostAdapter, HostContext
from powercontext.hosts.files import FileChange, InstallError, read_text

RUNNER_MARKER = "// @powercontext-recall-runner: install puts assets/recall_runner.js here\n"


def asset_text(name: str) -> str:
    """The text of a file shipped in ``powercontext/hosts/assets``."""
    return files("powercontext.hosts").joinpath("assets", name).read_text(encoding="utf-8")


def plugin_text(name: str) -> str:
    """A host's recall plugin as installed: the asset ``name`` with the shared hook runner
    (``recall_runner.js``) in place of its marker line.

    Each host loads one plugin file and the project commits it, so the runner is copied in here rather
    than imported from a second file at run time.
    """
    head, marker, tail = asset_text(name).partition(RUNNER_MARKER)
    if not marker:
        raise ValueError(f"assets/{name} has no recall-runner marker")
    return head + asset_text("recall_runner.js") + tail


def plugin_file_change(path: Path, root: Path, text: str | None, why: str) -> FileChange:
    """Write (``text``) or remove (None) one plugin file PowerContext owns whole (removing a Python file also
    removes the bytecode the host compiled from it)."""
    return FileChange(path, root, read_text(path, root), text, why, owns_bytecode=path.suffix == ".py")


def project_file_present(ctx: HostContext, relative: Path) -> bool:
    """Whether the project holds the host's file at ``relative`` (its opt-in or plugin): the host is installed.
    A file that cannot be read safely counts as installed, so the doctor's checks name it."""
    try:
        return read_text(ctx.project / relative, ctx.project) is not None
    except InstallError:
        return True


def plugin_check(name: str, path: Path, root: Path, expected: str, fix: str) -> Check:
    """Whether the installed plugin at ``path`` is this version's."""
    try:
        text = read_text(path, root)
    except ValueError as exc:
        return Check(name, "fail", str(exc), fix)
    if text is None:
        return Check(name, "fail", f"{path} is missing", fix)
    if text != expected:
        return Check(name, "warn", f"{path} differs from this version's; {fix}", fix)
    return Check(name, "ok", str(path))


def interpreter_check(name: str, project: Path, env: Mapping[str, str]) -> Check:
    """Which interpreter the plugin will run the hook with (the plugin's own rule), or how to get one."""
    from powercontext.hosts.machine import hook_interpreter, install_this_checkout

    interpreter = hook_interpreter(project, env)
    if interpreter is None:
        fix = install_this_checkout()
        hint = "or set POWERCONTEXT_PYTHON, or run `powercontext hosts install` again from its venv"
        return Check(name, "fail", f"no interpreter with PowerContext found; {fix}, {hint}", fix)
    return Check(name, "ok", f"runs {interpreter} -m powercontext.hosts.hook")


def user_level_in_use_elsewhere(adapter: HostAdapter, ctx: HostContext) -> bool:
    """Whether another project on this machine still has ``adapter``'s host installed, so the user-level plugin
    ``hosts uninstall`` would otherwise remove must stay. The projects asked are those ``hosts install``
    recorded in the machine settings (``machine.recorded_projects``)."""
    from dataclasses import replace

    from powercontext.hosts.machine import recorded_projects

    for project in recorded_projects(ctx.env):
        if project != ctx.project and project.is_dir() and adapter.installed(replace(ctx, project=project)):
            return True
    return False
