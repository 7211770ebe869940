"""``powercontext hosts install claude-code|codex``: register the hook and the MCP server for one project.

Project-level files only (nothing under the user's home is touched):

* claude-code: ``.claude/settings.json`` (``hooks.UserPromptSubmit``) and ``.mcp.json`` (``mcpServers``);
* codex: ``.codex/hooks.json`` (``hooks.UserPromptSubmit``) and a managed ``[mcp_servers.powercontext]``
  block in ``.codex/config.toml``;
* with ``--scope``: ``.powercontext.toml`` (``scope_id``), read by the hook.

Commands use the absolute path of the interpreter that runs the installer, so the hook works
without PowerContext on ``PATH``. Re-running replaces PowerContext's entries and keeps every other.
"""

from __future__ import annotations

import json
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from powercontext.hosts import HOSTS
from powercontext.hosts.scope import CONFIG_FILE

HOOK_MODULE = "powercontext.hosts.hook"
HOOK_TIMEOUT_S = 10
CODEX_BEGIN = "# BEGIN powercontext (managed by `powercontext hosts install codex`)"
CODEX_END = "# END powercontext"


class InstallError(ValueError):
    """An existing file PowerContext must edit but cannot parse; the message names the file."""


@dataclass
class InstallReport:
    host: str
    written: list[Path] = field(default_factory=list)


def hook_command(host: str, python: str | None = None) -> str:
    return f"{shlex.quote(python or sys.executable)} -m {HOOK_MODULE} {host}"


def mcp_command(python: str | None = None) -> tuple[str, list[str]]:
    return python or sys.executable, ["-m", "powercontext", "mcp"]


def _load_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        raise InstallError(f"{path} is not valid JSON; fix or move it, then run install again") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} must hold a JSON object")
    return data


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def is_powercontext_hook(entry: Any) -> bool:
    hooks = entry.get("hooks") if isinstance(entry, dict) else None
    return isinstance(hooks, list) and any(
        isinstance(h, dict) and HOOK_MODULE in str(h.get("command", "")) for h in hooks
    )


def _register_hook(path: Path, host: str, python: str | None) -> None:
    settings = _load_json(path)
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError(f"{path}: 'hooks' must be an object")
    entries = [e for e in hooks.get("UserPromptSubmit", []) if not is_powercontext_hook(e)]
    entries.append({"hooks": [{"type": "command", "command": hook_command(host, python), "timeout": HOOK_TIMEOUT_S}]})
    hooks["UserPromptSubmit"] = entries
    _write_json(path, settings)


def _codex_mcp_block(python: str | None) -> str:
    command, args = mcp_command(python)
    return "\n".join(
        [
            CODEX_BEGIN,
            "[mcp_servers.powercontext]",
            f"command = {json.dumps(command)}",
            f"args = {json.dumps(args)}",
            CODEX_END,
            "",
        ]
    )


def _register_codex_mcp(path: Path, python: str | None) -> None:
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if CODEX_BEGIN in text and CODEX_END in text:
        before, rest = text.split(CODEX_BEGIN, 1)
        after = rest.split(CODEX_END, 1)[1].lstrip("\n")
        text = before + after
    elif "[mcp_servers.powercontext]" in text:
        raise InstallError(f"{path} already defines [mcp_servers.powercontext]; remove it to let install manage it")
    if text and not text.endswith("\n"):
        text += "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + ("\n" if text else "") + _codex_mcp_block(python), encoding="utf-8")


def install(host: str, project: Path, scope_id: str | None = None, python: str | None = None) -> InstallReport:
    """Register PowerContext's hook and MCP server for ``host`` in ``project``."""
    if host not in HOSTS:
        raise InstallError(f"unknown host {host!r}; choose one of {', '.join(HOSTS)}")
    report = InstallReport(host)
    if host == "claude-code":
        settings = project / ".claude" / "settings.json"
        _register_hook(settings, host, python)
        mcp = project / ".mcp.json"
        config = _load_json(mcp)
        servers = config.setdefault("mcpServers", {})
        if not isinstance(servers, dict):
            raise InstallError(f"{mcp}: 'mcpServers' must be an object")
        command, args = mcp_command(python)
        servers["powercontext"] = {"command": command, "args": args}
        _write_json(mcp, config)
        report.written += [settings, mcp]
    else:
        hooks = project / ".codex" / "hooks.json"
        _register_hook(hooks, host, python)
        config_toml = project / ".codex" / "config.toml"
        _register_codex_mcp(config_toml, python)
        report.written += [hooks, config_toml]
    if scope_id is not None:
        path = project / CONFIG_FILE
        path.write_text(f"scope_id = {json.dumps(scope_id)}\n", encoding="utf-8")
        report.written.append(path)
    return report


def hook_files(project: Path, home: Path) -> dict[str, list[Path]]:
    """Where each host reads hooks from (project first, then the user's)."""
    return {
        "claude-code": [
            project / ".claude" / "settings.json",
            project / ".claude" / "settings.local.json",
            home / ".claude" / "settings.json",
        ],
        "codex": [project / ".codex" / "hooks.json", home / ".codex" / "hooks.json"],
    }


def registered_hooks(project: Path, home: Path) -> dict[str, Path | None]:
    """For each host, the first hooks file that registers PowerContext's hook (None if none does)."""
    found: dict[str, Path | None] = {}
    for host, paths in hook_files(project, home).items():
        found[host] = None
        for path in paths:
            try:
                entries = _load_json(path).get("hooks", {}).get("UserPromptSubmit", [])
            except (InstallError, AttributeError):
                continue
            if isinstance(entries, list) and any(is_powercontext_hook(e) for e in entries):
                found[host] = path
                break
    return found
