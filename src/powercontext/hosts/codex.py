"""Codex: the ``UserPromptSubmit`` hook, the MCP server, and the two trusts Codex requires before using them.

* ``.codex/hooks.json`` (committed): ``hooks.UserPromptSubmit`` runs ``powercontext hook codex``;
* ``.codex/config.toml`` (committed): a marked ``[mcp_servers.powercontext]`` block running
  ``powercontext mcp`` with ``env_vars`` so ``POWERCONTEXT_URL``/``POWERCONTEXT_TOKEN`` reach it;
* ``$CODEX_HOME/config.toml`` (default ``~/.codex``, this user): a marked block that trusts exactly this
  project (``[projects."<dir>"] trust_level = "trusted"``; Codex ignores an untrusted project's ``.codex``)
  and exactly this hook (``[hooks.state."<dir>/.codex/hooks.json:user_prompt_submit:<group>:0"]
  trusted_hash``; Codex skips a hook whose hash it was not told to trust). Recorded only with consent.
  When ``powercontext`` is not on ``PATH`` (the README's venv install), the block holds instead a hook naming
  the interpreter that ran install, run only inside this project, and trusts that one (``codex_machine``).

Codex's trust hash is ``sha256:`` + hex SHA-256 of the compact, key-sorted JSON of the hook's normalized
identity: ``{"event_name": "user_prompt_submit", "hooks": [{"async": false, "command": ..., "timeout": ...,
"type": "command"}]}`` (plus ``"matcher"`` when set). Any edit of the command or timeout changes it, so
``hosts doctor`` recomputes it from the file and compares.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from powercontext.hosts.adapter import (
    MCP_ARGS,
    MCP_COMMAND,
    MCP_ENV_VARS,
    Check,
    HooksFile,
    HostContext,
    command_check,
)
from powercontext.hosts.codex_machine import hook_lines, machine_entry, machine_handler, renumbered, user_hook_key
from powercontext.hosts.files import (
    FileChange,
    InstallError,
    parse_toml,
    read_text,
    toml_string,
    with_block,
    without_block,
)
from powercontext.hosts.local_hooks import interpreter_check, rerun_install_fix
from powercontext.hosts.machine import machine_hook_needed
from powercontext.hosts.mcp_probe import mcp_checks
from powercontext.hosts.stop_hook import stop_handler, with_stop_hook, without_stop_hook

EVENT = "user_prompt_submit"
STOP_EVENT = "stop"
MCP_BLOCK = "mcp"


def trust_hash(handler: dict[str, Any], matcher: str | None = None, event: str = EVENT) -> str:
    """The hash Codex computes for one command hook handler (what ``trusted_hash`` must equal)."""
    normalized = {
        "async": bool(handler.get("async", False)),
        "command": str(handler.get("command", "")),
        "timeout": int(handler.get("timeout", 600)),
        "type": "command",
    }
    identity: dict[str, Any] = {"event_name": event, "hooks": [normalized]}
    if matcher is not None:
        identity["matcher"] = matcher
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def hook_state_key(project: Path, group: int, event: str = EVENT) -> str:
    return f"{project / '.codex' / 'hooks.json'}:{event}:{group}:0"


class Codex:
    name = "codex"
    title = "Codex"

    @staticmethod
    def user_dir(ctx: HostContext) -> Path:
        return ctx.config_dir("CODEX_HOME", ".codex")

    @classmethod
    def user_config(cls, ctx: HostContext) -> Path:
        return cls.user_dir(ctx) / "config.toml"

    @staticmethod
    def paths(project: Path) -> tuple[Path, Path]:
        return project / ".codex" / "hooks.json", project / ".codex" / "config.toml"

    def _trust_block_id(self, ctx: HostContext) -> str:
        return f"trust {ctx.project}"

    def plan_install(self, ctx: HostContext) -> list[FileChange]:
        hooks_path, config_path = self.paths(ctx.project)
        hook_change, group, handler = HooksFile(hooks_path, ctx.project).registration(self.name)
        stop: tuple[int, dict[str, Any]] | None = None
        if not machine_hook_needed(ctx.env):  # the final answer is captured when `powercontext` is on PATH
            hook_change = with_stop_hook(hook_change, self.name)
            stop = stop_handler(hook_change)
        changes = [hook_change]
        before = read_text(config_path, ctx.project)
        rest = parse_toml(config_path, without_block(before or "", MCP_BLOCK))
        if "powercontext" in rest.get("mcp_servers", {}):
            raise InstallError(f"{config_path} already defines [mcp_servers.powercontext]; remove it, then run again")
        body = [
            "[mcp_servers.powercontext]",
            f"command = {toml_string(MCP_COMMAND)}",
            f"args = {json.dumps(MCP_ARGS)}",
            f"env_vars = {json.dumps(MCP_ENV_VARS)}",
        ]
        why = "MCP server `powercontext mcp` (env_vars pass POWERCONTEXT_URL/TOKEN)"
        changes.append(FileChange(config_path, ctx.project, before, with_block(before, MCP_BLOCK, body), why))
        changes.append(self._trust_change(ctx, group, handler, stop))
        return changes

    def _trust_change(
        self, ctx: HostContext, group: int, handler: dict[str, Any], stop: tuple[int, dict[str, Any]] | None = None
    ) -> FileChange:
        """This project's marked block in the user config: the project's trust, and either the trust of the
        committed hook or (``powercontext`` not on PATH) the per-machine hook and its trust (``codex_machine``)."""
        path = self.user_config(ctx)
        before = read_text(path, self.user_dir(ctx))
        block_id = self._trust_block_id(ctx)
        rest = parse_toml(path, without_block(before or "", block_id))
        body: list[str] = []
        if machine_hook_needed(ctx.env):
            ours = machine_handler(ctx.project)
            hook = hook_lines(ours)
            key, digest = user_hook_key(path, len(rest.get("hooks", {}).get("UserPromptSubmit", []))), trust_hash(ours)
            why = f"this machine's hook ({sys.executable} runs it only in this project; `powercontext` is not on PATH)"
        else:
            hook, key, digest = [], hook_state_key(ctx.project, group), trust_hash(handler)
            why = f"trust this project and this hook (hash {digest[:19]}…) in Codex's user config"
        project_trust = rest.get("projects", {}).get(str(ctx.project), {}).get("trust_level")
        if project_trust is None:
            body += [f"[projects.{toml_string(str(ctx.project))}]", 'trust_level = "trusted"']
        elif project_trust != "trusted":
            raise InstallError(f'{path} marks {ctx.project} as {project_trust!r}; change it to "trusted" yourself')
        if key in rest.get("hooks", {}).get("state", {}):
            raise InstallError(f"{path} already has [hooks.state.{toml_string(key)}]; remove it, then run again")
        body += [*hook, f"[hooks.state.{toml_string(key)}]", f"trusted_hash = {toml_string(digest)}"]
        if stop is not None:  # the Stop hook (capture of the final answer) is trusted the same way
            stop_key = hook_state_key(ctx.project, stop[0], STOP_EVENT)
            stop_digest = trust_hash(stop[1], event=STOP_EVENT)
            body += [f"[hooks.state.{toml_string(stop_key)}]", f"trusted_hash = {toml_string(stop_digest)}"]
        after = renumbered(path, with_block(before, block_id, body))
        return FileChange(path, self.user_dir(ctx), before, after, why, trust=True)

    def plan_uninstall(self, ctx: HostContext) -> list[FileChange]:
        hooks_path, config_path = self.paths(ctx.project)
        changes = [without_stop_hook(HooksFile(hooks_path, ctx.project).removal())]
        before = read_text(config_path, ctx.project)
        after = without_block(before or "", MCP_BLOCK) if before is not None else None
        changes.append(FileChange(config_path, ctx.project, before, after or None, "remove the MCP server"))
        user = self.user_config(ctx)
        before = read_text(user, self.user_dir(ctx))
        after = without_block(before or "", self._trust_block_id(ctx)) if before is not None else None
        after = renumbered(user, after) if after else after  # the other projects' hooks keep their trust
        why = "remove the trust (and this machine's hook) install recorded"
        changes.append(FileChange(user, self.user_dir(ctx), before, after or None, why))
        return [c for c in changes if c.changed]

    def installed(self, ctx: HostContext) -> bool:
        hooks_path, _ = self.paths(ctx.project)
        try:
            return HooksFile(hooks_path, ctx.project).registered() is not None
        except InstallError:
            return False

    def checks(self, ctx: HostContext) -> list[Check]:
        fix = f"powercontext hosts install {self.name} --yes"
        hook_fix = rerun_install_fix(self.name)
        hooks = HooksFile(self.paths(ctx.project)[0], ctx.project)
        try:
            found = hooks.registered()
            user = parse_toml(self.user_config(ctx), read_text(self.user_config(ctx), self.user_dir(ctx)))
        except InstallError as exc:
            return [Check("codex-hook", "fail", str(exc), fix)]
        if found is None:
            return [Check("codex-hook", "fail", f"no PowerContext hook in {hooks.path}", fix)]
        group, handler = found
        checks = [Check("codex-hook", "ok", f"registered in {hooks.path}")]
        machine = machine_entry(user, ctx.project)
        if machine is None:
            checks.append(command_check("codex-hook-command", str(handler.get("command", "")), ctx.env, hook_fix))
            key = hook_state_key(ctx.project, group)
        else:
            group, handler, python = machine
            check = interpreter_check("codex-hook-command", python, self.user_config(ctx))
            checks.append(check if check.status == "ok" else replace(check, fix=hook_fix))
            key = user_hook_key(self.user_config(ctx), group)
        checks += self._trust_checks(ctx, user, key, handler, fix)
        return checks + self._mcp_checks(ctx, fix)

    def _trust_checks(
        self, ctx: HostContext, user: dict[str, Any], key: str, handler: dict[str, Any], fix: str
    ) -> list[Check]:
        config = self.user_config(ctx)
        level = user.get("projects", {}).get(str(ctx.project), {}).get("trust_level")
        if level == "trusted":
            checks = [Check("codex-project-trust", "ok", f"trusted in {config}")]
        else:
            detail = f"not trusted in {config}: Codex ignores this project's .codex/ (hook and MCP)"
            checks = [Check("codex-project-trust", "fail", detail, fix)]
        recorded = user.get("hooks", {}).get("state", {}).get(key, {}).get("trusted_hash")
        current = trust_hash(handler)
        if recorded == current:
            checks.append(Check("codex-hook-trust", "ok", "recorded hash matches the hook"))
        elif recorded is None:
            checks.append(Check("codex-hook-trust", "fail", "hook not trusted: Codex skips it", fix))
        else:
            checks.append(Check("codex-hook-trust", "fail", "stale trust: the hook changed since it was trusted", fix))
        return checks

    def _mcp_checks(self, ctx: HostContext, fix: str) -> list[Check]:
        _, config_path = self.paths(ctx.project)
        try:
            server = (
                parse_toml(config_path, read_text(config_path, ctx.project)).get("mcp_servers", {}).get("powercontext")
            )
        except InstallError as exc:
            return [Check("codex-mcp", "fail", str(exc), fix)]
        if not isinstance(server, dict):
            return [Check("codex-mcp", "warn", f"no [mcp_servers.powercontext] in {config_path} (hook only)", fix)]
        missing = [v for v in MCP_ENV_VARS if v not in server.get("env_vars", [])]
        if missing:
            detail = f"env_vars lacks {', '.join(missing)}: the MCP server would not see them"
            checks = [Check("codex-mcp-env", "fail", detail, fix)]
        else:
            checks = [Check("codex-mcp-env", "ok", "POWERCONTEXT_URL and POWERCONTEXT_TOKEN pass through")]
        # Codex passes a server only the variables its ``env_vars`` names (and its ``env`` table) of ours.
        passed = [str(v) for v in server.get("env_vars", [])]
        env = {k: v for k, v in ctx.env.items() if not k.startswith("POWERCONTEXT_") or k in passed}
        table: dict[str, Any] = server["env"] if isinstance(server.get("env"), dict) else {}
        env.update({str(k): str(v) for k, v in table.items()})
        return checks + mcp_checks(self.name, "codex", server, env, ctx)
