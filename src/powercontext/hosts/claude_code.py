"""Claude Code: the ``UserPromptSubmit`` hook and the project MCP server, shared files portable.

* ``.claude/settings.json`` (committed): ``hooks.UserPromptSubmit`` runs ``powercontext hook claude-code``;
* ``.mcp.json`` (committed): ``mcpServers.powercontext`` runs ``powercontext mcp``;
* ``.claude/settings.local.json`` (this machine; Claude Code keeps it out of git): the user's approval of
  that project MCP server, ``enabledMcpjsonServers: ["powercontext"]``. Without it ``claude mcp list``
  shows the server as pending approval and ``claude -p`` never starts it. When ``powercontext`` is not on
  ``PATH`` (the README's venv install), also the hooks naming the interpreter that ran install
  (``hosts.local_hooks``); the committed ones defer to them;
* ``~/.claude.json`` (``$CLAUDE_CONFIG_DIR/.claude.json``): Claude Code reads the local approval above only
  for a workspace the user trusts, so install sets ``projects["<dir>"].hasTrustDialogAccepted`` when it is
  not already set, and marks that it did (``powercontextRecordedTrust``) so uninstall removes only its own.

Both trust records are written only with consent (``--yes`` or an answered prompt).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from powercontext.hosts.adapter import (
    MCP_ARGS,
    MCP_COMMAND,
    Check,
    HooksFile,
    HostContext,
)
from powercontext.hosts.files import (
    FileChange,
    InstallError,
    parse_json_object,
    prune_empty,
    read_text,
    render_json,
)
from powercontext.hosts.local_hooks import hook_runner_check, machine_hooks_change, settings_after
from powercontext.hosts.mcp_probe import mcp_checks
from powercontext.hosts.stop_hook import with_stop_hook, without_stop_hook

SERVER = "powercontext"
TRUST_KEY = "hasTrustDialogAccepted"
OUR_MARK = "powercontextRecordedTrust"


def claude_config_dir(ctx: HostContext) -> Path:
    base = ctx.env.get("CLAUDE_CONFIG_DIR")
    return Path(base) if base else ctx.home


def claude_json(ctx: HostContext) -> Path:
    return claude_config_dir(ctx) / ".claude.json"


def _workspace_trust(ctx: HostContext, add: bool) -> FileChange:
    path = claude_json(ctx)
    before = read_text(path, claude_config_dir(ctx))
    data = parse_json_object(path, before)
    projects = data.get("projects")
    entry = projects.get(str(ctx.project)) if isinstance(projects, dict) else None
    changed = False
    if add and not (isinstance(entry, dict) and entry.get(TRUST_KEY) is True):
        project_entry = data.setdefault("projects", {}).setdefault(str(ctx.project), {})
        project_entry.update({TRUST_KEY: True, OUR_MARK: True})
        changed = True
    elif not add and isinstance(entry, dict) and entry.pop(OUR_MARK, None) is True:
        entry.pop(TRUST_KEY, None)
        if not entry and isinstance(projects, dict):
            del projects[str(ctx.project)]  # the entry install created: nothing else in it
            prune_empty(data, "projects")
        changed = True
    after = json.dumps(data, indent=2, ensure_ascii=False) + "\n" if changed else before
    why = "trust this workspace in Claude Code (it reads local MCP approvals only in trusted workspaces)"
    return FileChange(
        path,
        claude_config_dir(ctx),
        before,
        after if after != before else before,
        why if add else "remove that trust",
        trust=add,
    )


class ClaudeCode:
    name = "claude-code"
    title = "Claude Code"

    @staticmethod
    def paths(project: Path) -> tuple[Path, Path, Path]:
        return project / ".claude" / "settings.json", project / ".mcp.json", project / ".claude" / "settings.local.json"

    def plan_install(self, ctx: HostContext) -> list[FileChange]:
        settings_path, mcp_path, local_path = self.paths(ctx.project)
        root = ctx.project
        changes = [with_stop_hook(HooksFile(settings_path, root).registration(self.name)[0], self.name)]
        before = read_text(mcp_path, root)
        mcp = parse_json_object(mcp_path, before)
        servers = mcp.setdefault("mcpServers", {})
        if not isinstance(servers, dict):
            raise InstallError(f"{mcp_path}: 'mcpServers' must be an object")
        servers[SERVER] = {"command": MCP_COMMAND, "args": list(MCP_ARGS)}
        changes.append(FileChange(mcp_path, root, before, render_json(mcp), "MCP server `powercontext mcp`"))
        hooks_change = machine_hooks_change(root, self.name, ctx.env, stop=True)
        changes.append(hooks_change)
        before = hooks_change.after
        local = settings_after(hooks_change)
        enabled = local.setdefault("enabledMcpjsonServers", [])
        if not isinstance(enabled, list):
            raise InstallError(f"{local_path}: 'enabledMcpjsonServers' must be a list")
        if SERVER not in enabled and local.get("enableAllProjectMcpServers") is not True:
            enabled.append(SERVER)
        prune_empty(local, "enabledMcpjsonServers")
        why = "approve the project MCP server `powercontext` for this project on this machine"
        changes.append(FileChange(local_path, root, before, render_json(local), why, trust=True))
        changes.append(_workspace_trust(ctx, add=True))
        return changes

    def plan_uninstall(self, ctx: HostContext) -> list[FileChange]:
        settings_path, mcp_path, local_path = self.paths(ctx.project)
        root = ctx.project
        changes = [without_stop_hook(HooksFile(settings_path, root).removal())]
        before = read_text(mcp_path, root)
        mcp = parse_json_object(mcp_path, before)
        if isinstance(mcp.get("mcpServers"), dict):
            mcp["mcpServers"].pop(SERVER, None)
            prune_empty(mcp, "mcpServers")
        changes.append(FileChange(mcp_path, root, before, render_json(mcp), "remove the MCP server"))
        hooks_change = machine_hooks_change(root, self.name, ctx.env, stop=True, remove=True)
        before = hooks_change.before
        local = settings_after(hooks_change)
        if isinstance(local.get("enabledMcpjsonServers"), list):
            local["enabledMcpjsonServers"] = [s for s in local["enabledMcpjsonServers"] if s != SERVER]
            prune_empty(local, "enabledMcpjsonServers")
        why = "remove the MCP approval and this machine's hook"
        changes.append(FileChange(local_path, root, before, render_json(local), why))
        changes.append(_workspace_trust(ctx, add=False))
        return [c for c in changes if c.changed]

    def _hook_files(self, ctx: HostContext) -> list[HooksFile]:
        settings_path, _, local_path = self.paths(ctx.project)
        user = HooksFile(ctx.home / ".claude" / "settings.json", ctx.home)
        return [HooksFile(settings_path, ctx.project), HooksFile(local_path, ctx.project), user]

    def _registered(self, ctx: HostContext) -> tuple[HooksFile, dict[str, Any]] | None:
        for hooks in self._hook_files(ctx):
            try:
                found = hooks.registered()
            except InstallError:
                continue
            if found is not None:
                return hooks, found[1]
        return None

    def installed(self, ctx: HostContext) -> bool:
        return self._registered(ctx) is not None

    def checks(self, ctx: HostContext) -> list[Check]:
        fix = f"powercontext hosts install {self.name} --yes"
        registered = self._registered(ctx)
        if registered is None:
            return [Check("claude-code-hook", "fail", "no PowerContext UserPromptSubmit hook", fix)]
        hooks, handler = registered
        found = Check("claude-code-hook", "ok", f"registered in {hooks.path}")
        return [found, hook_runner_check(self.name, ctx.project, handler, ctx.env), *self._mcp_checks(ctx, fix)]

    def _mcp_checks(self, ctx: HostContext, fix: str) -> list[Check]:
        _, mcp_path, local_path = self.paths(ctx.project)
        try:
            server = parse_json_object(mcp_path, read_text(mcp_path, ctx.project)).get("mcpServers", {}).get(SERVER)
            local = parse_json_object(local_path, read_text(local_path, ctx.project))
            user = parse_json_object(claude_json(ctx), read_text(claude_json(ctx), claude_config_dir(ctx)))
        except InstallError as exc:
            return [Check("claude-code-mcp", "fail", str(exc), fix)]
        except AttributeError:
            return [Check("claude-code-mcp", "fail", f"{mcp_path} or {local_path} is not valid JSON", fix)]
        if not isinstance(server, dict):
            return [Check("claude-code-mcp", "warn", f"no `powercontext` server in {mcp_path} (hook only)", fix)]
        checks = []
        approved = (
            SERVER in (local.get("enabledMcpjsonServers") or []) or local.get("enableAllProjectMcpServers") is True
        )
        projects = user.get("projects")
        entry = projects.get(str(ctx.project)) if isinstance(projects, dict) else None
        if not (isinstance(entry, dict) and entry.get(TRUST_KEY) is True):
            detail = f"workspace not trusted in {claude_json(ctx)}: Claude Code ignores the local MCP approval"
            checks.append(Check("claude-code-workspace-trust", "fail", detail, fix))
        if approved:
            checks.append(Check("claude-code-mcp-approval", "ok", f"approved in {local_path}"))
        else:
            detail = "pending approval: Claude Code will not start the project MCP server"
            checks.append(Check("claude-code-mcp-approval", "fail", detail, fix))
        # Claude Code starts the server with the user's environment plus the entry's own ``env``.
        entry_env: dict[str, Any] = server["env"] if isinstance(server.get("env"), dict) else {}
        env = {**ctx.env, **{str(k): str(v) for k, v in entry_env.items()}}
        return checks + mcp_checks(self.name, "claude-code", server, env, ctx)
