"""OpenCode: ``powercontext hosts install|uninstall opencode`` and its ``hosts doctor`` checks.

Install writes, in the project:

* ``.powercontext/opencode.js``: the plugin (``chat.message`` runs the PowerContext hook once per prompt
  within the hook budget; ``experimental.chat.messages.transform`` adds the validated content to that
  prompt's model calls);
* ``opencode.json``: ``plugin`` lists ``./.powercontext/opencode.js`` and ``mcp.powercontext`` runs
  ``powercontext mcp`` (both portable: no interpreter path, URL or token).

The plugin is a plain file referenced from ``opencode.json``, not a ``.opencode/`` directory: OpenCode
installs packages for a ``.opencode/`` directory at every start (tens of seconds offline).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from powercontext.hosts.adapter import Check, HostContext
from powercontext.hosts.extension import interpreter_check, plugin_check, plugin_file_change, plugin_text
from powercontext.hosts.files import FileChange, InstallError, parse_json_object, read_text, render_json

CONFIG = "opencode.json"
PLUGIN_FILE = Path(".powercontext") / "opencode.js"
PLUGIN_REF = "./.powercontext/opencode.js"
MCP_ENTRY: dict[str, Any] = {"type": "local", "command": ["powercontext", "mcp"], "enabled": True}


def _plugins(config: dict[str, Any], path: Path) -> list[Any]:
    plugins = config.get("plugin", [])
    if not isinstance(plugins, list):
        raise InstallError(f"{path}: 'plugin' must be a list")
    return plugins


def _mcp(config: dict[str, Any], path: Path) -> dict[str, Any]:
    servers = config.get("mcp", {})
    if not isinstance(servers, dict):
        raise InstallError(f"{path}: 'mcp' must be an object")
    return servers


def _config(project: Path) -> tuple[Path, str | None, dict[str, Any]]:
    path = project / CONFIG
    before = read_text(path, project)
    if before is None and read_text(project / "opencode.jsonc", project) is not None:
        raise InstallError(f"{project / 'opencode.jsonc'} exists: move its settings to {CONFIG}, then run again")
    try:
        return path, before, parse_json_object(path, before)
    except InstallError:
        raise InstallError(f"{path} is not plain JSON (comments?); fix or move it, then run again") from None


class OpenCode:
    name = "opencode"
    title = "OpenCode"

    def plan_install(self, ctx: HostContext) -> list[FileChange]:
        """The files install writes; other plugins and MCP servers are kept."""
        path, before, config = _config(ctx.project)
        plugins = [p for p in _plugins(config, path) if p != PLUGIN_REF]
        servers = _mcp(config, path)
        config["plugin"] = [*plugins, PLUGIN_REF]
        config["mcp"] = {**servers, "powercontext": MCP_ENTRY}
        plugin = plugin_file_change(
            ctx.project / PLUGIN_FILE, ctx.project, plugin_text("opencode.js"), "the recall plugin"
        )
        why = f"plugin {PLUGIN_REF} and mcp.powercontext"
        return [plugin, FileChange(path, ctx.project, before, render_json(config), why)]

    def plan_uninstall(self, ctx: HostContext) -> list[FileChange]:
        """Remove exactly what install added."""
        path, before, config = _config(ctx.project)
        plugins = _plugins(config, path)
        servers = _mcp(config, path)
        if PLUGIN_REF in plugins:
            config["plugin"] = [p for p in plugins if p != PLUGIN_REF]
        if "powercontext" in servers:
            servers.pop("powercontext")
            config["mcp"] = servers
        for key in ("plugin", "mcp"):
            if key in config and not config[key]:
                del config[key]
        why = f"remove plugin {PLUGIN_REF} and mcp.powercontext"
        changes = [FileChange(path, ctx.project, before, render_json(config) if before is not None else None, why)]
        changes.append(plugin_file_change(ctx.project / PLUGIN_FILE, ctx.project, None, "the recall plugin"))
        return [c for c in changes if c.changed]

    def installed(self, ctx: HostContext) -> bool:
        try:
            path, _, config = _config(ctx.project)
            return read_text(ctx.project / PLUGIN_FILE, ctx.project) is not None or PLUGIN_REF in _plugins(config, path)
        except InstallError:
            return True  # let the checks name the broken file

    def checks(self, ctx: HostContext) -> list[Check]:
        """What OpenCode will do in the project: load the plugin, run the hook, start the MCP server."""
        fix = "run `powercontext hosts install opencode`"
        try:
            path, _, config = _config(ctx.project)
            plugins = _plugins(config, path)
            servers = _mcp(config, path)
        except InstallError as exc:
            return [Check("opencode-plugin", "fail", str(exc), fix)]
        found: list[Check] = []
        if PLUGIN_REF not in plugins:
            found.append(Check("opencode-plugin", "fail", f"{CONFIG} does not load {PLUGIN_REF}; {fix}", fix))
        else:
            check = plugin_check(
                "opencode-plugin", ctx.project / PLUGIN_FILE, ctx.project, plugin_text("opencode.js"), fix
            )
            ok = check.status == "ok"
            found.append(replace(check, detail=f"{CONFIG} loads {PLUGIN_REF}") if ok else check)
        dot_dir = ctx.project / ".opencode"
        if dot_dir.is_dir() and not (dot_dir / "node_modules").is_dir():
            hint = "OpenCode installs packages for it at every start (slow offline)"
            found.append(Check("opencode-dir", "warn", f"{dot_dir} has no node_modules: {hint}"))
        found.append(interpreter_check("opencode-hook", ctx.project, ctx.env))
        found.append(_mcp_check(servers.get("powercontext"), ctx, fix))
        return found


def _mcp_check(entry: Any, ctx: HostContext, fix: str) -> Check:
    """PowerContext's MCP entry is there, and the command it runs is on the PATH OpenCode starts it with."""
    import shutil

    from powercontext.hosts.machine import install_this_checkout

    if entry != MCP_ENTRY:
        return Check("opencode-mcp", "warn", f"mcp.powercontext is not PowerContext's entry; {fix}", fix)
    command = MCP_ENTRY["command"][0]
    if shutil.which(command, path=ctx.env.get("PATH")) is None:
        return Check(
            "opencode-mcp", "fail", f"mcp.powercontext runs `{command}`, which is not on PATH", install_this_checkout()
        )
    return Check("opencode-mcp", "ok", f"mcp.powercontext runs `{' '.join(MCP_ENTRY['command'])}` from PATH")
