"""The hosts integrated through a project file rather than a hook command: OpenCode and Pi."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from powercontext.hosts.doctor import Check
from powercontext.hosts.project_files import FileChange

EXTENSION_HOSTS = ("opencode", "pi")


def _module(host: str) -> ModuleType:
    if host == "opencode":
        from powercontext.hosts import opencode

        return opencode
    from powercontext.hosts import pi

    return pi


def plan_install(host: str, project: Path, scope_id: str | None) -> list[FileChange]:
    changes: list[FileChange] = _module(host).plan_install(project, scope_id)
    return changes


def plan_uninstall(host: str, project: Path) -> list[FileChange]:
    changes: list[FileChange] = _module(host).plan_uninstall(project)
    return changes


def installed_checks(project: Path, env: dict[str, str]) -> list[Check]:
    """``hosts doctor`` lines for each of these hosts installed in ``project`` (none for the others)."""
    found: list[Check] = []
    for host in EXTENSION_HOSTS:
        module = _module(host)
        if module.is_installed(project):
            found.extend(module.checks(project, env))
    return found
