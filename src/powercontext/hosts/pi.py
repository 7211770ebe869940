"""``powercontext hosts install|uninstall pi`` and Pi's ``hosts doctor`` checks.

Install writes ``.pi/extensions/powercontext.ts`` in the project (Pi loads every ``.pi/extensions/*.ts``
at start): on ``before_agent_start`` it runs the PowerContext hook within the hook budget and returns
the validated content as a message beside the prompt. With a Scope it also writes
``.powercontext.toml``. Pi has no MCP client by design, so there is no MCP entry.
"""

from __future__ import annotations

from pathlib import Path

from powercontext.hosts.doctor import Check
from powercontext.hosts.opencode import interpreter_check
from powercontext.hosts.project_files import FileChange, plugin_text, scope_change

EXTENSION_FILE = Path(".pi") / "extensions" / "powercontext.ts"


def plan_install(project: Path, scope_id: str | None) -> list[FileChange]:
    """The files ``hosts install pi`` writes."""
    return [
        FileChange(project / EXTENSION_FILE, plugin_text("pi.ts"), "the recall extension"),
        *scope_change(project, scope_id),
    ]


def plan_uninstall(project: Path) -> list[FileChange]:
    """Remove the extension (``.powercontext.toml`` stays: every host reads it)."""
    path = project / EXTENSION_FILE
    return [FileChange(path, None, "the recall extension")] if path.exists() else []


def is_installed(project: Path) -> bool:
    return (project / EXTENSION_FILE).exists()


def checks(project: Path, env: dict[str, str]) -> list[Check]:
    """What Pi will do in ``project``: load the extension and run the hook."""
    path = project / EXTENSION_FILE
    fix = "run `powercontext hosts install pi`"
    if not path.is_file():
        extension = Check("pi-extension", "fail", f"{path} is missing; {fix}")
    elif path.read_text(encoding="utf-8", errors="replace") != plugin_text("pi.ts"):
        extension = Check("pi-extension", "warn", f"{path} differs from this version's; {fix}")
    else:
        extension = Check("pi-extension", "ok", f"{path}")
    return [extension, interpreter_check("pi-hook", env)]
