"""``powercontext hosts install|uninstall opencode`` and OpenCode's ``hosts doctor`` checks.

Install writes, in the project:

* ``.powercontext/opencode.js``: the plugin (``chat.message`` runs the PowerContext hook once per prompt
  within the hook budget; ``experimental.chat.messages.transform`` adds the validated content to that
  prompt's model calls);
* ``opencode.json``: ``plugin`` lists ``./.powercontext/opencode.js`` and ``mcp.powercontext`` runs
  ``powercontext mcp`` (both portable: no interpreter path, URL or token);
* with a Scope: ``.powercontext.toml``.

The plugin is a plain file referenced from ``opencode.json``, not a ``.opencode/`` directory: OpenCode
installs packages for a ``.opencode/`` directory at every start (tens of seconds offline).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from powercontext.hosts.doctor import Check
from powercontext.hosts.project_files import (
    FileChange,
    ProjectFileError,
    hook_interpreter,
    json_text,
    load_json_object,
    plugin_text,
    scope_change,
)

CONFIG = "opencode.json"
PLUGIN_FILE = Path(".powercontext") / "opencode.js"
PLUGIN_REF = "./.powercontext/opencode.js"
MCP_ENTRY: dict[str, Any] = {"type": "local", "command": ["powercontext", "mcp"], "enabled": True}


def _plugins(config: dict[str, Any], path: Path) -> list[Any]:
    plugins = config.get("plugin", [])
    if not isinstance(plugins, list):
        raise ProjectFileError(f"{path}: 'plugin' must be a list")
    return plugins


def _mcp(config: dict[str, Any], path: Path) -> dict[str, Any]:
    servers = config.get("mcp", {})
    if not isinstance(servers, dict):
        raise ProjectFileError(f"{path}: 'mcp' must be an object")
    return servers


def _config_path(project: Path) -> Path:
    if not (project / CONFIG).exists() and (project / "opencode.jsonc").exists():
        raise ProjectFileError(f"{project / 'opencode.jsonc'} exists: move its settings to {CONFIG}, then run again")
    return project / CONFIG


def plan_install(project: Path, scope_id: str | None) -> list[FileChange]:
    """The files ``hosts install opencode`` writes; other plugins and MCP servers are kept."""
    path = _config_path(project)
    config = load_json_object(path)
    plugins = [p for p in _plugins(config, path) if p != PLUGIN_REF]
    servers = _mcp(config, path)
    config["plugin"] = [*plugins, PLUGIN_REF]
    config["mcp"] = {**servers, "powercontext": MCP_ENTRY}
    return [
        FileChange(project / PLUGIN_FILE, plugin_text("opencode.js"), "the recall plugin"),
        FileChange(path, json_text(config), f"plugin {PLUGIN_REF} and mcp.powercontext"),
        *scope_change(project, scope_id),
    ]


def plan_uninstall(project: Path) -> list[FileChange]:
    """Remove exactly what install added (``.powercontext.toml`` stays: every host reads it)."""
    changes: list[FileChange] = []
    path = project / CONFIG
    config = load_json_object(path)
    plugins = _plugins(config, path)
    servers = _mcp(config, path)
    if PLUGIN_REF in plugins or "powercontext" in servers:
        config["plugin"] = [p for p in plugins if p != PLUGIN_REF]
        servers.pop("powercontext", None)
        config["mcp"] = servers
        for key in ("plugin", "mcp"):
            if not config[key]:
                del config[key]
        content = json_text(config) if config else None
        changes.append(FileChange(path, content, f"remove plugin {PLUGIN_REF} and mcp.powercontext"))
    if (project / PLUGIN_FILE).exists():
        changes.append(FileChange(project / PLUGIN_FILE, None, "the recall plugin"))
    return changes


def is_installed(project: Path) -> bool:
    try:
        config = load_json_object(project / CONFIG)
    except ProjectFileError:
        return True  # let the checks name the broken file
    return (project / PLUGIN_FILE).exists() or PLUGIN_REF in (config.get("plugin") or [])


def checks(project: Path, env: dict[str, str]) -> list[Check]:
    """What OpenCode will do in ``project``: load the plugin, run the hook, start the MCP server."""
    fix = "run `powercontext hosts install opencode`"
    try:
        config = load_json_object(project / CONFIG)
        plugins = _plugins(config, project / CONFIG)
        servers = _mcp(config, project / CONFIG)
    except ProjectFileError as exc:
        return [Check("opencode-plugin", "fail", str(exc))]
    found: list[Check] = []
    plugin = project / PLUGIN_FILE
    if PLUGIN_REF not in plugins or not plugin.is_file():
        found.append(Check("opencode-plugin", "fail", f"{CONFIG} does not load {PLUGIN_REF}; {fix}"))
    elif plugin.read_text(encoding="utf-8", errors="replace") != plugin_text("opencode.js"):
        found.append(Check("opencode-plugin", "warn", f"{plugin} differs from this version's; {fix}"))
    else:
        found.append(Check("opencode-plugin", "ok", f"{CONFIG} loads {PLUGIN_REF}"))
    if (project / ".opencode").is_dir() and not (project / ".opencode" / "node_modules").is_dir():
        hint = "OpenCode installs packages for it at every start (slow offline)"
        found.append(Check("opencode-dir", "warn", f"{project / '.opencode'} has no node_modules: {hint}"))
    found.append(interpreter_check("opencode-hook", env))
    if servers.get("powercontext") != MCP_ENTRY:
        found.append(Check("opencode-mcp", "warn", f"mcp.powercontext is not PowerContext's entry; {fix}"))
    return found


def interpreter_check(name: str, env: dict[str, str]) -> Check:
    interpreter = hook_interpreter(env)
    if interpreter is None:
        hint = "put `powercontext` on PATH (e.g. pipx install powercontext) or set POWERCONTEXT_PYTHON"
        return Check(name, "fail", f"no interpreter with PowerContext found; {hint}")
    return Check(name, "ok", f"runs {interpreter} -m powercontext.hosts.hook")
