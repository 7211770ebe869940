"""Bub: ``powercontext hosts install|uninstall bub`` and its ``hosts doctor`` checks.

Bub loads plugins from the ``bub`` entry-point group of its own Python environment, so the plugin is a
package, ``integrations/bub`` in this repository, installed once per machine with
``<bub's python> -m pip install <clone>/integrations/bub``. It recalls only in a workspace that opted in:
install writes ``.bub/powercontext.json`` (portable; commit it). Its ``before_llm_call`` runs the
PowerContext hook once per user prompt within the hook budget and puts the validated content, as a system
message, next to that prompt in every model call of the turn.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from powercontext.hosts.adapter import Check, HostContext
from powercontext.hosts.extension import interpreter_check, plugin_check, plugin_file_change, project_file_present
from powercontext.hosts.files import FileChange

OPT_IN = Path(".bub") / "powercontext.json"
OPT_IN_TEXT = json.dumps({"recall": True, "plugin": "powercontext-recall-bub"}, indent=2) + "\n"
PLUGIN_MODULE = "powercontext_recall_bub"
_PROBE = "import importlib.metadata as m; print(any(e.name == 'powercontext' for e in m.entry_points(group='bub')))"


def plugin_install_command() -> str:
    from powercontext.hosts.machine import this_checkout

    clone = this_checkout()
    package = clone / "integrations" / "bub" if clone else "<your powercontext clone>/integrations/bub"
    return f"<the python that runs bub> -m pip install {package}"


class Bub:
    name = "bub"
    title = "Bub"

    def plan_install(self, ctx: HostContext) -> list[FileChange]:
        why = "opt this workspace in to recall (the powercontext-recall-bub plugin reads it)"
        return [plugin_file_change(ctx.project / OPT_IN, ctx.project, OPT_IN_TEXT, why)]

    def plan_uninstall(self, ctx: HostContext) -> list[FileChange]:
        change = plugin_file_change(ctx.project / OPT_IN, ctx.project, None, "opt this workspace out")
        return [change] if change.changed else []

    def installed(self, ctx: HostContext) -> bool:
        return project_file_present(ctx, OPT_IN)

    def checks(self, ctx: HostContext) -> list[Check]:
        fix = "run `powercontext hosts install bub`"
        found = [plugin_check("bub-opt-in", ctx.project / OPT_IN, ctx.project, OPT_IN_TEXT, fix)]
        found.append(self._plugin_check(ctx))
        return [*found, interpreter_check("bub-hook", ctx.project, ctx.env)]

    @staticmethod
    def _plugin_check(ctx: HostContext) -> Check:
        """Whether the ``bub`` on PATH has the plugin (asked of its own interpreter, without running Bub)."""
        script = shutil.which("bub", path=ctx.env.get("PATH"))
        if script is None:
            return Check("bub-plugin", "warn", "`bub` is not on PATH; cannot check its plugin")
        try:
            with open(script, encoding="utf-8", errors="replace") as handle:
                python = handle.readline(4096)[2:].strip()
            done = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return Check("bub-plugin", "warn", f"cannot ask {script} for its plugins")
        if done.stdout.strip() == "True":
            return Check("bub-plugin", "ok", f"powercontext-recall-bub is installed for {script}")
        return Check("bub-plugin", "fail", f"{script} has no powercontext plugin", plugin_install_command())
