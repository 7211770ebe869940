"""Planned file changes for hosts whose integration is a file in the project (OpenCode, Pi).

An install or uninstall is computed first as a list of ``FileChange`` (so ``--dry-run`` can print it)
and then applied. Every file written here is portable: it names no interpreter, venv, URL or token, so
a team can commit it; the machine's own PowerContext is found at run time.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from powercontext.hosts.scope import CONFIG_FILE


class ProjectFileError(ValueError):
    """A file PowerContext must edit but cannot parse; the message names the file and the fix."""


@dataclass(frozen=True)
class FileChange:
    path: Path
    content: str | None  # None: delete the file
    summary: str

    def describe(self) -> str:
        verb = "delete" if self.content is None else ("update" if self.path.exists() else "create")
        return f"{verb} {self.path}: {self.summary}"


def asset_text(name: str) -> str:
    """The text of a file shipped in ``powercontext/hosts/assets``."""
    return files("powercontext.hosts").joinpath("assets", name).read_text(encoding="utf-8")


RUNNER_MARKER = "// @powercontext-recall-runner: install puts assets/recall_runner.js here\n"


def plugin_text(name: str) -> str:
    """A host's recall plugin as installed: the asset ``name`` with the shared hook runner
    (``recall_runner.js``) in place of its marker line.

    OpenCode and Pi each load one plugin file from the project and the project commits it, so the runner is
    copied in here rather than imported from a second file at run time.
    """
    head, marker, tail = asset_text(name).partition(RUNNER_MARKER)
    if not marker:
        raise ValueError(f"assets/{name} has no recall-runner marker")
    return head + asset_text("recall_runner.js") + tail


def load_json_object(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        raise ProjectFileError(f"{path} is not plain JSON (comments?); fix or move it, then run again") from None
    if not isinstance(data, dict):
        raise ProjectFileError(f"{path} must hold a JSON object")
    return data


def json_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2) + "\n"


def scope_change(project: Path, scope_id: str | None) -> list[FileChange]:
    if scope_id is None:
        return []
    text = f"scope_id = {json.dumps(scope_id)}\n"
    return [FileChange(project / CONFIG_FILE, text, f"bind this project to Scope {scope_id}")]


def apply(changes: list[FileChange]) -> None:
    """Write (or delete) each planned file; a file is replaced whole through a temporary sibling."""
    for change in changes:
        if change.content is None:
            if change.path.exists():
                change.path.unlink()
            continue
        change.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = change.path.with_name(change.path.name + ".powercontext-tmp")
        temporary.write_text(change.content, encoding="utf-8")
        os.replace(temporary, change.path)


def hook_interpreter(env: dict[str, str] | None = None) -> str | None:
    """The interpreter the OpenCode and Pi extensions will run the hook with (the same rule as theirs)."""
    env = dict(os.environ) if env is None else env
    explicit = env.get("POWERCONTEXT_PYTHON", "").strip()
    if explicit:
        return explicit
    script = shutil.which("powercontext", path=env.get("PATH"))
    if script is None:
        return None
    try:
        with open(script, encoding="utf-8", errors="replace") as handle:
            first = handle.readline(4096)
    except OSError:
        return None
    interpreter = first[2:].strip() if first.startswith("#!") else ""
    if not interpreter or any(c.isspace() for c in interpreter) or not Path(interpreter).is_file():
        return None
    return interpreter
