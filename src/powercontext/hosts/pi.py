"""Pi: ``powercontext hosts install|uninstall pi`` and its ``hosts doctor`` checks.

Install writes ``.pi/extensions/powercontext.ts`` in the project (Pi loads every ``.pi/extensions/*.ts``
at start): on ``before_agent_start`` it runs the PowerContext hook within the hook budget and returns
the validated content as a message beside the prompt. Pi has no MCP client by design, so there is no
MCP entry.
"""

from __future__ import annotations

from pathlib import Path

from powercontext.hosts.adapter import Check, HostContext
from powercontext.hosts.extension import (
    interpreter_check,
    plugin_check,
    plugin_file_change,
    plugin_text,
    project_file_present,
)
from powercontext.hosts.files import FileChange

EXTENSION_FILE = Path(".pi") / "extensions" / "powercontext.ts"


class Pi:
    name = "pi"
    title = "Pi"

    def plan_install(self, ctx: HostContext) -> list[FileChange]:
        return [
            plugin_file_change(ctx.project / EXTENSION_FILE, ctx.project, plugin_text("pi.ts"), "the recall extension")
        ]

    def plan_uninstall(self, ctx: HostContext) -> list[FileChange]:
        change = plugin_file_change(ctx.project / EXTENSION_FILE, ctx.project, None, "the recall extension")
        return [change] if change.changed else []

    def installed(self, ctx: HostContext) -> bool:
        return project_file_present(ctx, EXTENSION_FILE)

    def checks(self, ctx: HostContext) -> list[Check]:
        """What Pi will do in the project: load the extension and run the hook."""
        fix = "run `powercontext hosts install pi`"
        extension = plugin_check("pi-extension", ctx.project / EXTENSION_FILE, ctx.project, plugin_text("pi.ts"), fix)
        return [extension, interpreter_check("pi-hook", ctx.project, ctx.env)]
