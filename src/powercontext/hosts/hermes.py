"""Hermes Agent: ``powercontext hosts install|uninstall hermes`` and its ``hosts doctor`` checks.

Install writes:

* ``.hermes/powercontext.json`` in the project (portable; commit it): opts the project in to recall;
* ``$HERMES_HOME/plugins/powercontext/{plugin.yaml,__init__.py}`` (default ``~/.hermes``): the user plugin.
  On ``pre_llm_call`` it runs the PowerContext hook within the hook budget in an opted-in project and returns
  the validated content, which Hermes appends to that turn's user message (ephemeral, not persisted);
* ``$HERMES_HOME/config.yaml``: a marked block enabling it (``plugins.enabled: [powercontext]``; Hermes loads
  no user plugin it was not told to). Recorded only with consent (``--yes`` or an answered prompt). When the
  file already has its own top-level ``plugins:`` key, install asks the user to add ``powercontext`` there.

Uninstall removes the project's opt-in, and the user plugin and its enabling block once no other project on
this machine still has Hermes installed (``extension.user_level_in_use_elsewhere``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from powercontext.hosts.adapter import Check, HostContext
from powercontext.hosts.extension import (
    asset_text,
    interpreter_check,
    plugin_check,
    plugin_file_change,
    project_file_present,
    user_level_in_use_elsewhere,
)
from powercontext.hosts.files import FileChange, InstallError, read_text, with_block, without_block

OPT_IN = Path(".hermes") / "powercontext.json"
OPT_IN_TEXT = json.dumps({"recall": True, "plugin": "powercontext"}, indent=2) + "\n"
PLUGIN = "powercontext"
ENABLE_BLOCK = "plugins"
_ENABLE_BODY = ["plugins:", "  enabled:", f"  - {PLUGIN}"]
_OWN_PLUGINS_KEY = re.compile(r"^plugins\s*:", re.MULTILINE)


def _outside_our_block(text: str) -> str:
    return without_block(text, ENABLE_BLOCK)


class Hermes:
    name = "hermes"
    title = "Hermes Agent"

    @staticmethod
    def home(ctx: HostContext) -> Path:
        return ctx.config_dir("HERMES_HOME", ".hermes")

    def _plugin_files(self, ctx: HostContext) -> list[tuple[Path, str]]:
        directory = self.home(ctx) / "plugins" / PLUGIN
        return [
            (directory / "plugin.yaml", asset_text("hermes_plugin.yaml")),
            (directory / "__init__.py", asset_text("hermes_plugin.py")),
        ]

    def plan_install(self, ctx: HostContext) -> list[FileChange]:
        home = self.home(ctx)
        why = "opt this project in to recall (the Hermes plugin reads it)"
        changes = [plugin_file_change(ctx.project / OPT_IN, ctx.project, OPT_IN_TEXT, why)]
        changes += [
            plugin_file_change(p, home, text, "the recall plugin (user-level)") for p, text in self._plugin_files(ctx)
        ]
        config = home / "config.yaml"
        before = read_text(config, home)
        if _OWN_PLUGINS_KEY.search(_outside_our_block(before or "")):
            if not re.search(rf"^\s*-\s*['\"]?{PLUGIN}['\"]?\s*$", before or "", re.MULTILINE):
                raise InstallError(
                    f"{config} has its own `plugins:` key: add `{PLUGIN}` to plugins.enabled, then run again"
                )
            return changes
        why = "enable the plugin in Hermes (it loads only plugins listed in plugins.enabled)"
        changes.append(
            FileChange(config, home, before, with_block(before, ENABLE_BLOCK, _ENABLE_BODY), why, trust=True)
        )
        return changes

    def plan_uninstall(self, ctx: HostContext) -> list[FileChange]:
        changes = [plugin_file_change(ctx.project / OPT_IN, ctx.project, None, "opt this project out of recall")]
        if not user_level_in_use_elsewhere(self, ctx):
            home = self.home(ctx)
            why = "the recall plugin (no other project on this machine uses it)"
            changes += [plugin_file_change(path, home, None, why) for path, _ in self._plugin_files(ctx)]
            config = home / "config.yaml"
            before = read_text(config, home)
            if before is not None:
                after = _outside_our_block(before)
                changes.append(FileChange(config, home, before, after, "stop enabling the plugin"))
        return [c for c in changes if c.changed]

    def installed(self, ctx: HostContext) -> bool:
        return project_file_present(ctx, OPT_IN)

    def checks(self, ctx: HostContext) -> list[Check]:
        fix = "powercontext hosts install hermes --yes"
        home = self.home(ctx)
        found = [plugin_check("hermes-opt-in", ctx.project / OPT_IN, ctx.project, OPT_IN_TEXT, fix)]
        found += [plugin_check("hermes-plugin", p, home, text, fix) for p, text in self._plugin_files(ctx)]
        try:
            config = read_text(home / "config.yaml", home) or ""
        except InstallError as exc:
            return [*found, Check("hermes-enabled", "fail", str(exc), fix)]
        if re.search(rf"^\s*-\s*['\"]?{PLUGIN}['\"]?\s*$", config, re.MULTILINE):
            found.append(Check("hermes-enabled", "ok", f"enabled in {home / 'config.yaml'}"))
        else:
            found.append(Check("hermes-enabled", "fail", f"not in plugins.enabled of {home / 'config.yaml'}", fix))
        return [*found, interpreter_check("hermes-hook", ctx.project, ctx.env)]
