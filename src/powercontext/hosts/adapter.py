"""What every agent host adapter provides, and the pieces the hook-style hosts share.

An adapter (one module per host, listed in ``powercontext.hosts.registry``) answers four questions for
one project: which file changes install it (``plan_install``), which remove exactly those
(``plan_uninstall``), whether it is installed (``installed``: shared files such as ``.powercontext.toml``
stay while any host is) and what ``hosts doctor`` should check (``checks``). Adapters only plan; the
installer applies the plan, asks before recording trust, and prints it for ``--dry-run``. Hook-style and
extension-style hosts (``registry``) implement the same protocol.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from powercontext.hosts.files import FileChange, parse_json_object, read_text, render_json

HOOK_MODULE = "powercontext.hosts.hook"
HOOK_TIMEOUT_S = 10
MCP_COMMAND = "powercontext"
MCP_ARGS = ["mcp"]
MCP_ENV_VARS = ["POWERCONTEXT_URL", "POWERCONTEXT_TOKEN"]


def mcp_server_fix() -> str:
    """What fixes an MCP server that does not answer: reinstall *this* checkout (never the PyPI name, which is
    an unrelated project) into the environment the ``powercontext`` on PATH runs from."""
    from powercontext.hosts.machine import this_checkout

    clone = this_checkout()
    where = clone or "<your powercontext clone>"
    return f"pip install -e '{where}[server]'   (into the environment the `powercontext` on PATH runs from)"


def hook_command(host: str, event: str | None = None) -> str:
    """The portable hook command committed files carry: ``powercontext`` from PATH, nothing machine-specific.
    ``event`` (a PowerContext event other than recall) is passed as a second argument."""
    return f"powercontext hook {host}" + (f" {event}" if event else "")


def machine_hook_command(host: str, event: str | None = None, python: str | None = None) -> str:
    """The per-machine hook command: the interpreter that ran ``hosts install`` (``python``, default this one)
    runs the hook module, so the host needs nothing on PATH. Written only to per-machine config files."""
    import sys

    interpreter = shlex.quote(python or sys.executable)
    return f"{interpreter} -m {HOOK_MODULE} {host}" + (f" {event}" if event else "")


@dataclass(frozen=True)
class Check:
    """One ``hosts doctor`` line; a ``fail`` carries the exact command that fixes it."""

    name: str
    status: str  # ok | warn | fail
    detail: str
    fix: str | None = None


@dataclass(frozen=True)
class HostContext:
    """Where a host is installed: the project, the user's home (user-level host config) and the environment."""

    project: Path
    home: Path
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    scope_id: str | None = None
    server_url: str | None = None  # where doctor found (or looked for) the Server, for its fix lines

    def config_dir(self, variable: str, default: str) -> Path:
        """A host's user config directory: ``$variable`` if set, else ``default`` under the home directory."""
        value = self.env.get(variable, "").strip()
        return Path(value) if value else self.home / default


class HostAdapter(Protocol):
    """One host. ``name``/``title`` match its ``registry.HostSpec``."""

    name: str
    title: str

    def plan_install(self, ctx: HostContext) -> list[FileChange]: ...

    def plan_uninstall(self, ctx: HostContext) -> list[FileChange]: ...

    def installed(self, ctx: HostContext) -> bool: ...

    def checks(self, ctx: HostContext) -> list[Check]: ...


# -- hooks.json (Claude Code and Codex share its shape) ---------------------------------------------


def is_powercontext_hook(entry: Any) -> bool:
    hooks = entry.get("hooks") if isinstance(entry, dict) else None
    return isinstance(hooks, list) and any(
        isinstance(h, dict) and _is_our_command(str(h.get("command", ""))) for h in hooks
    )


def _is_our_command(command: str) -> bool:
    return HOOK_MODULE in command or command.startswith("powercontext hook ") or "/powercontext hook " in command


def with_hook(path: Path, settings: dict[str, Any], host: str, command: str | None = None) -> int:
    """Replace PowerContext's ``UserPromptSubmit`` entry in ``settings`` (in place) with one running ``command``
    (default: the portable ``hook_command``); returns its group index."""
    from powercontext.hosts.files import InstallError

    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict) or not isinstance(hooks.get("UserPromptSubmit", []), list):
        raise InstallError(f"{path}: 'hooks.UserPromptSubmit' must be a list inside an object")
    entries = [e for e in hooks.get("UserPromptSubmit", []) if not is_powercontext_hook(e)]
    handler = {"type": "command", "command": command or hook_command(host), "timeout": HOOK_TIMEOUT_S}
    entries.append({"hooks": [handler]})
    hooks["UserPromptSubmit"] = entries
    return len(entries) - 1


def without_hook(settings: dict[str, Any]) -> None:
    """Remove PowerContext's entries (in place), and the containers that became empty."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict) or not isinstance(hooks.get("UserPromptSubmit"), list):
        return
    hooks["UserPromptSubmit"] = [e for e in hooks["UserPromptSubmit"] if not is_powercontext_hook(e)]
    if not hooks["UserPromptSubmit"]:
        del hooks["UserPromptSubmit"]
    if not hooks:
        del settings["hooks"]


@dataclass(frozen=True)
class HooksFile:
    """One host's hooks file (``.claude/settings.json``, ``.codex/hooks.json``): PowerContext's hook in it."""

    path: Path
    root: Path  # the project (or the host's config directory) the file must stay inside

    def registration(self, host: str, command: str | None = None) -> tuple[FileChange, int, dict[str, Any]]:
        """The change that (re)registers PowerContext's hook (running ``command``, default the portable one), with
        the hook's group index and the handler it writes (what Codex's trust hash is computed from)."""
        before = read_text(self.path, self.root)
        settings = parse_json_object(self.path, before)
        group = with_hook(self.path, settings, host, command)
        handler: dict[str, Any] = settings["hooks"]["UserPromptSubmit"][group]["hooks"][0]
        change = FileChange(self.path, self.root, before, render_json(settings), "hook: UserPromptSubmit")
        return change, group, handler

    def removal(self) -> FileChange:
        """The change that removes PowerContext's hook (others' entries stay)."""
        before = read_text(self.path, self.root)
        settings = parse_json_object(self.path, before)
        without_hook(settings)
        return FileChange(self.path, self.root, before, render_json(settings), "remove the hook")

    def registered(self) -> tuple[int, dict[str, Any]] | None:
        """(group index, handler) of PowerContext's hook, if registered; ``InstallError`` if the file is not a
        JSON object (or is a link, or leaves its root)."""
        return our_hook(parse_json_object(self.path, read_text(self.path, self.root)))


def our_hook(settings: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    """(group index, handler) of PowerContext's hook in a hooks file, if registered."""
    entries = settings.get("hooks", {}).get("UserPromptSubmit", []) if isinstance(settings.get("hooks"), dict) else []
    for index, entry in enumerate(entries if isinstance(entries, list) else []):
        if is_powercontext_hook(entry):
            handler = next(h for h in entry["hooks"] if isinstance(h, dict) and _is_our_command(str(h.get("command"))))
            return index, handler
    return None


# -- checks shared by hosts -------------------------------------------------------------------------


def command_check(name: str, command: str, env: Mapping[str, str], fix: str) -> Check:
    """Whether the first word of a command resolves on the PATH the host will use."""
    try:
        program = shlex.split(command)[0]
    except (ValueError, IndexError):
        return Check(name, "fail", f"cannot parse the command {command!r}", fix)
    found = shutil.which(program, path=env.get("PATH"))
    if found is None:
        return Check(name, "fail", f"`{program}` is not on PATH", fix)
    return Check(name, "ok", f"`{command}` ({found})")
