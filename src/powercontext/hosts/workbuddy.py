"""WorkBuddy (and CodeBuddy Code, the engine it runs): the ``UserPromptSubmit`` hook in the project's settings.

* ``.codebuddy/settings.json`` (committed): ``hooks.UserPromptSubmit`` runs ``powercontext hook workbuddy``, and
  ``hooks.Stop`` runs ``powercontext hook workbuddy stop`` (capture of the agent's final answer, which the engine
  hands its Stop hook as ``last_assistant_message``, as Claude Code does);
* ``.codebuddy/settings.local.json`` (this machine; the engine's project-local settings, git-ignored): only when
  ``powercontext`` is not on ``PATH``, the hook naming the interpreter that ran install
  (``hosts.local_hooks``); the committed one defers to it.

CodeBuddy Code reads Claude-Code-style hooks from ``.codebuddy/settings.json`` in the project and from
``settings.json`` in its user config directory (``$CODEBUDDY_CONFIG_DIR``, ``~/.codebuddy``; the WorkBuddy
app's is ``~/.workbuddy``), and ``settings.local.json`` beside each. The project files are the ones both read,
so install writes only those: nothing per user, no trust record (the engine runs project hooks without one).
A hook's JSON ``hookSpecificOutput.additionalContext`` reaches the model as a ``<system-reminder>`` in the user message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from powercontext.hosts.adapter import Check, HooksFile, HostContext
from powercontext.hosts.files import FileChange, InstallError
from powercontext.hosts.local_hooks import hook_runner_check, machine_hooks_change
from powercontext.hosts.stop_hook import with_stop_hook, without_stop_hook


class WorkBuddy:
    name = "workbuddy"
    title = "WorkBuddy"

    @staticmethod
    def settings(project: Path) -> HooksFile:
        return HooksFile(project / ".codebuddy" / "settings.json", project)

    def _hook_files(self, ctx: HostContext) -> list[HooksFile]:
        local = HooksFile(ctx.project / ".codebuddy" / "settings.local.json", ctx.project)
        users = [
            ctx.config_dir("CODEBUDDY_CONFIG_DIR", ".codebuddy"),
            ctx.config_dir("WORKBUDDY_CONFIG_DIR", ".workbuddy"),
        ]
        return [self.settings(ctx.project), local, *(HooksFile(d / "settings.json", d) for d in users)]

    def plan_install(self, ctx: HostContext) -> list[FileChange]:
        committed = with_stop_hook(self.settings(ctx.project).registration(self.name)[0], self.name)
        return [committed, machine_hooks_change(ctx.project, self.name, ctx.env, stop=True)]

    def plan_uninstall(self, ctx: HostContext) -> list[FileChange]:
        changes = [
            without_stop_hook(self.settings(ctx.project).removal()),
            machine_hooks_change(ctx.project, self.name, ctx.env, stop=True, remove=True),
        ]
        return [c for c in changes if c.changed]

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
        registered = self._registered(ctx)
        if registered is None:
            fix = f"powercontext hosts install {self.name}"
            return [Check("workbuddy-hook", "fail", "no PowerContext UserPromptSubmit hook", fix)]
        hooks, handler = registered
        found = Check("workbuddy-hook", "ok", f"registered in {hooks.path}")
        return [found, hook_runner_check(self.name, ctx.project, handler, ctx.env)]
