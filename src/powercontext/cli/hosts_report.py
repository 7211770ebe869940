"""``hosts install|uninstall --json``: one JSON document on stdout, for success and for errors alike.

Each planned file change is one entry: ``host``, ``path``, ``action`` (``create``, ``update``, ``remove``),
``why``, and its ``outcome``: ``applied``, ``dry-run`` (printed, nothing written) or ``skipped`` (a trust record
the user did not consent to). An error adds ``error: {"code", "message"}`` and keeps the text mode's exit code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from powercontext.cli.common import print_json
from powercontext.text.urls import mask_credentials

if TYPE_CHECKING:
    from powercontext.hosts.files import FileChange


@dataclass
class HostsReport:
    """What one ``hosts install|uninstall`` run did, collected for ``--json``."""

    command: str  # install | uninstall
    host: str
    project: Path
    dry_run: bool
    changes: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def add(self, path: Path, action: str, why: str, outcome: str) -> None:
        self.changes.append(
            {
                "host": self.host,
                "path": str(path),
                "action": action,
                "why": why,
                "outcome": outcome,
                "applied": outcome == "applied",
                "dry_run": outcome == "dry-run",
            }
        )

    def add_file_changes(self, changes: list[FileChange], outcome: str) -> None:
        for change in changes:
            self.add(change.path, change.action, change.why, outcome)

    def document(self, status: str, error: dict[str, str] | None = None) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "command": self.command,
            "host": self.host,
            "project": str(self.project),
            "dry_run": self.dry_run,
            "status": status,
            "changes": self.changes,
            "warnings": self.warnings,
        }
        if error is not None:
            doc["error"] = error
        return doc

    def emit(self, status: str) -> None:
        print_json(self.document(status))

    def fail(self, exit_code: int, error_code: str, message: str) -> typer.Exit:
        """Print the document with its error; raise the returned ``Exit``."""
        print_json(self.document("error", {"code": error_code, "message": mask_credentials(message)}))
        return typer.Exit(exit_code)
