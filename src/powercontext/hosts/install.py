"""``powercontext hosts install|uninstall HOST``: plan every file change, then apply it (or print it).

A plan is the host adapter's changes (``powercontext.hosts.registry``) plus two shared ones, the same for
every host:

* ``.powercontext.toml`` (committed) with ``scope_id`` when ``--scope`` is given: the only thing a
  shared file says about this machine's setup is which Scope the project recalls from;
* this machine's entry for the project in ``$XDG_CONFIG_HOME/powercontext/hosts.json``: ``--url``, the
  installer's ``POWERCONTEXT_TOKEN`` if set, and the interpreter that ran install (what the plugins run the
  hook with when ``powercontext`` is not on PATH); read by the hook, the plugins and ``powercontext mcp``.

Changes marked ``trust`` record the user's trust in the host's own config; they are applied only with
consent (``--yes`` or an answered prompt). Uninstall removes exactly what install added: PowerContext's
entries and marked blocks, files it created that are left empty, and the shared files only when no other
host in the project is still installed.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from powercontext.hosts.adapter import HostAdapter, HostContext
from powercontext.hosts.files import FileChange, InstallError, apply_change, read_text
from powercontext.hosts.machine import (
    created_paths,
    machine_config_path,
    project_settings,
    recorded_originals,
    render_with,
)
from powercontext.hosts.registry import HOSTS, UnknownHost, adapter_for
from powercontext.hosts.scope import CONFIG_FILE

_MAX_ORIGINAL = 16 * 1024  # larger files are given back as data (same content, PowerContext's layout)

__all__ = ["FileChange", "InstallError", "apply_plan", "plan_install", "plan_uninstall"]


def _adapter(host: str) -> HostAdapter:
    try:
        return adapter_for(host)
    except UnknownHost as exc:
        raise InstallError(str(exc)) from None


def _scope_change(project: Path, scope_id: str) -> FileChange:
    path = project / CONFIG_FILE
    before = read_text(path, project)
    return FileChange(path, project, before, with_scope(before, scope_id), f"bind this project to {scope_id}")


def with_scope(before: str | None, scope_id: str) -> str:
    """The project file with its ``scope_id`` line set to ``scope_id``, every other line kept as it was: a
    ``capture = false`` the user wrote must survive binding the project to another Scope."""
    line = f"scope_id = {json.dumps(scope_id)}"
    kept = (before or "").splitlines()
    for i, old in enumerate(kept):
        if old.split("=", 1)[0].strip() == "scope_id":
            kept[i] = line
            return "\n".join(kept) + "\n"
    return "\n".join([line, *kept]) + "\n"


def _machine_change(
    project: Path,
    env: Mapping[str, str],
    entry: dict[str, str] | None,
    created: set[str] | None = None,
    originals: dict[str, tuple[str, str]] | None = None,
) -> FileChange:
    path = machine_config_path(env)
    root = path.parent.parent  # $XDG_CONFIG_HOME (or ~/.config): PowerContext's own directory below it
    why = "this machine's settings for the project (Server URL/token, interpreter)" if entry else "forget them"
    after = render_with(path, project, entry, created, originals)
    return FileChange(path, root, read_text(path, root), after, why, private=True)


def _outside(change: FileChange, project: Path) -> bool:
    return not Path(os.path.abspath(change.root)).is_relative_to(project)


def _will_create(changes: list[FileChange], project: Path) -> set[str]:
    """The files and directories outside the project that applying ``changes`` creates (absolute paths)."""
    found: set[str] = set()
    for change in changes:
        if not _outside(change, project) or change.after is None:
            continue
        path = Path(os.path.abspath(change.path))
        if change.before is None:
            found.add(str(path))
        directory = path.parent
        while not os.path.lexists(directory) and directory != directory.parent:
            found.add(str(directory))
            directory = directory.parent
    return found


def plan_install(host: str, ctx: HostContext, url: str | None = None, token: str | None = None) -> list[FileChange]:
    """Every file change ``hosts install`` makes, in order; nothing is written. What it creates outside the
    project is recorded with this machine's settings, so uninstall removes exactly that when left empty."""
    changes = _adapter(host).plan_install(ctx)
    if ctx.scope_id is not None:
        changes.append(_scope_change(ctx.project, ctx.scope_id))
    given = {k: v for k, v in (("url", url), ("token", token), ("python", sys.executable)) if v}
    # What is not given again is kept: a new token alone must not forget the recorded URL.
    entry = {**project_settings(ctx.project, ctx.env), **given}
    machine = _machine_change(ctx.project, ctx.env, entry)
    created = _will_create([*changes, machine], ctx.project) - {str(machine.path)}
    originals = _rewritten(changes, ctx)
    changes.append(_machine_change(ctx.project, ctx.env, entry, created, originals))
    return [c for c in changes if c.changed]


def _rewritten(changes: list[FileChange], ctx: HostContext) -> dict[str, tuple[str, str]]:
    """(text before install, text install writes) for each existing project JSON file install rewrites (edited
    as data, so its layout changes): what uninstall needs to give back the user's bytes. A file still holding
    what an earlier install wrote keeps the text from before that install."""
    recorded = recorded_originals(ctx.env)
    found: dict[str, tuple[str, str]] = {}
    for change in changes:
        if _outside(change, ctx.project) or change.path.suffix != ".json" or None in (change.before, change.after):
            continue
        before, after = str(change.before), str(change.after)
        if len(before) > _MAX_ORIGINAL or before == after:
            continue
        earlier = recorded.get(str(change.path))
        found[str(change.path)] = (earlier[0] if earlier and earlier[1] == before else before, after)
    return found


def _restored(change: FileChange, recorded: dict[str, tuple[str, str]]) -> FileChange:
    """The user's own bytes back when uninstall leaves the file meaning what it meant before install and nobody
    changed it since install wrote it."""
    earlier = recorded.get(str(change.path))
    if earlier is None or change.before != earlier[1] or change.after is None:
        return change
    try:
        same = json.loads(change.after) == json.loads(earlier[0])
    except ValueError:
        return change
    return replace(change, after=earlier[0]) if same else change


def installed_hosts(ctx: HostContext, but: str | None = None) -> list[str]:
    """The hosts installed in the project (every host in the registry is asked), except ``but``."""
    return [name for name in HOSTS if name != but and adapter_for(name).installed(ctx)]


def plan_uninstall(host: str, ctx: HostContext) -> list[FileChange]:
    """Every file change ``hosts uninstall`` makes: exactly what install added, and nothing another host needs."""
    changes = _adapter(host).plan_uninstall(ctx)
    if not installed_hosts(ctx, but=host):
        scope_file = ctx.project / CONFIG_FILE
        text = read_text(scope_file, ctx.project)
        if text is not None and all(line.startswith("scope_id = ") for line in text.splitlines() if line.strip()):
            changes.append(FileChange(scope_file, ctx.project, text, None, "unbind the Scope (no other host uses it)"))
        changes.append(_machine_change(ctx.project, ctx.env, None))
    created, recorded = created_paths(ctx.env), recorded_originals(ctx.env)
    return [c for c in (_restored(_tidied(c, created, ctx.project), recorded) for c in changes) if c.changed]


def _tidied(change: FileChange, created: set[str], project: Path) -> FileChange:
    """Outside the project: a file install created that is left empty is removed, and so are the directories
    install created that are left empty by that; nothing that existed before install is."""
    if not _outside(change, project):
        return change
    after = change.after
    if after is not None and after.strip() in ("", "{}") and os.path.abspath(change.path) in created:
        after = None
    if after is None:
        chain: list[Path] = []
        directory = Path(os.path.abspath(change.root))
        while str(directory) in created:
            chain.append(directory)
            directory = directory.parent
        return replace(change, after=None, prune_also=tuple(chain))
    return change


def apply_plan(changes: list[FileChange], trust_ok: bool) -> tuple[list[FileChange], list[FileChange]]:
    """Apply the plan; trust changes only when ``trust_ok``. Returns (applied, skipped)."""
    applied: list[FileChange] = []
    skipped: list[FileChange] = []
    for change in changes:
        if change.trust and not trust_ok:
            skipped.append(change)
            continue
        apply_change(change)
        applied.append(change)
    return applied, skipped
