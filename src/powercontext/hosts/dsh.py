"""DSH (DeepSeek Harness): ``powercontext hosts install|uninstall dsh`` and its ``hosts doctor`` checks.

Install writes:

* ``.dsh/powercontext.json`` in the project (portable; commit it): opts the project in to recall;
* ``$DSH_HOME/powercontext/recall.mjs`` (default ``~/.dsh``): the user-level Cordis plugin. On the first
  ``agent/pre-step`` of each turn it runs the PowerContext hook within the hook budget in an opted-in
  project and adds the validated content as one more user message entering that step;
* ``$DSH_HOME/cordis.patch.yml``: a marked block inserting the plugin into every profile's tree (DSH's
  home patch layer, which applies to every profile). Loading code into every DSH run is recorded only with
  consent (``--yes`` or an answered prompt). A file that is not a block-style YAML list is left alone and
  the user is asked to add the entry.

Uninstall removes the project's opt-in, and the plugin and its block once no other project on this machine
(``machine.projects_using``) still has DSH installed.
"""

from __future__ import annotations

import json
from pathlib import Path

from powercontext.hosts.adapter import Check, HostContext
from powercontext.hosts.extension import (
    interpreter_check,
    plugin_check,
    plugin_file_change,
    plugin_text,
    project_file_present,
    user_level_in_use_elsewhere,
)
from powercontext.hosts.files import FileChange, InstallError, read_text, with_block, without_block

OPT_IN = Path(".dsh") / "powercontext.json"
OPT_IN_TEXT = json.dumps({"recall": True, "plugin": "powercontext-recall"}, indent=2) + "\n"
PLUGIN = Path("powercontext") / "recall.mjs"
PATCH_FILE = "cordis.patch.yml"
BLOCK = "dsh"
PLUGIN_ID = "powercontext-recall"


def _patch_body(plugin: Path) -> list[str]:
    # A JSON string is a YAML double-quoted scalar: any path is quoted safely.
    return ["- insert:", f"    - id: {PLUGIN_ID}", f"      name: {json.dumps(str(plugin))}"]


def _is_block_list(text: str) -> bool:
    """Whether appending ``- …`` entries keeps ``text`` one YAML list: it has no content, or its first
    content line starts a block-style sequence entry at column 0."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#") and stripped != "---":
            return line.startswith("- ") or line == "-"
    return True


class Dsh:
    name = "dsh"
    title = "DSH"

    @staticmethod
    def home(ctx: HostContext) -> Path:
        return ctx.config_dir("DSH_HOME", ".dsh")

    def _patch_change(self, ctx: HostContext, install: bool) -> FileChange:
        home = self.home(ctx)
        path = home / PATCH_FILE
        before = read_text(path, home)
        rest = without_block(before or "", BLOCK)
        if not install:
            return FileChange(path, home, before, (rest or None) if before is not None else None, "unload the plugin")
        if not _is_block_list(rest):
            entry = "; ".join(_patch_body(home / PLUGIN))
            message = f"{path} is not a block-style YAML list: add this entry yourself, then run again: {entry}"
            raise InstallError(message)
        after = with_block(before, BLOCK, _patch_body(home / PLUGIN))
        why = "load the plugin in every DSH profile (DSH's home patch layer)"
        return FileChange(path, home, before, after, why, trust=True)

    def plan_install(self, ctx: HostContext) -> list[FileChange]:
        home = self.home(ctx)
        why = "opt this project in to recall (the DSH plugin reads it)"
        return [
            plugin_file_change(ctx.project / OPT_IN, ctx.project, OPT_IN_TEXT, why),
            plugin_file_change(home / PLUGIN, home, plugin_text("dsh.mjs"), "the recall plugin (user-level)"),
            self._patch_change(ctx, install=True),
        ]

    def plan_uninstall(self, ctx: HostContext) -> list[FileChange]:
        changes = [plugin_file_change(ctx.project / OPT_IN, ctx.project, None, "opt this project out of recall")]
        if not user_level_in_use_elsewhere(self, ctx):
            home = self.home(ctx)
            why = "the recall plugin (no other project on this machine uses it)"
            changes += [self._patch_change(ctx, install=False), plugin_file_change(home / PLUGIN, home, None, why)]
        return [c for c in changes if c.changed]

    def installed(self, ctx: HostContext) -> bool:
        return project_file_present(ctx, OPT_IN)

    def checks(self, ctx: HostContext) -> list[Check]:
        fix = "powercontext hosts install dsh --yes"
        home = self.home(ctx)
        found = [
            plugin_check("dsh-opt-in", ctx.project / OPT_IN, ctx.project, OPT_IN_TEXT, fix),
            plugin_check("dsh-plugin", home / PLUGIN, home, plugin_text("dsh.mjs"), fix),
        ]
        try:
            patches = read_text(home / PATCH_FILE, home) or ""
        except InstallError as exc:
            return [*found, Check("dsh-loaded", "fail", str(exc), fix)]
        if str(home / PLUGIN) in patches and PLUGIN_ID in patches:
            found.append(Check("dsh-loaded", "ok", f"inserted by {home / PATCH_FILE}"))
        else:
            found.append(Check("dsh-loaded", "fail", f"{home / PATCH_FILE} does not insert {home / PLUGIN}", fix))
        return [*found, interpreter_check("dsh-hook", ctx.project, ctx.env)]
