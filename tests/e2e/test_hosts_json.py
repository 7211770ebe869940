"""``powercontext hosts install|uninstall --json``: stdout is one JSON document listing every change, for
success, dry run and errors alike, with the exit codes of the text mode."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_hosts_cli import home, pc, project, snapshot, user_env

__all__ = ["home", "project"]  # fixtures, shared with the text-mode tests


def document(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    doc = json.loads(done.stdout)  # the whole of stdout: one document, nothing else
    assert isinstance(doc, dict)
    return doc


def by_path(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {change["path"]: change for change in doc["changes"]}


def test_install_lists_each_applied_change(project: Path, home: Path) -> None:
    done = pc("hosts", "install", "codex", "--scope", "s:json", "--yes", "--json", cwd=project, env=user_env(home))
    assert done.returncode == 0, done.stderr
    doc = document(done)
    assert (doc["command"], doc["host"], doc["status"], doc["dry_run"]) == ("install", "codex", "installed", False)
    changes = by_path(doc)
    for path in (project / ".codex/hooks.json", project / ".codex/config.toml", project / ".powercontext.toml"):
        assert changes[str(path)]["action"] == "create"
        assert path.is_file()
    assert changes[str(home / ".codex/config.toml")]["why"]  # the trust record, applied with --yes
    assert {(c["host"], c["outcome"], c["applied"], c["dry_run"]) for c in doc["changes"]} == {
        ("codex", "applied", True, False)
    }
    again = document(pc("hosts", "install", "codex", "--yes", "--json", cwd=project, env=user_env(home)))
    assert again["status"] == "already-installed" and again["changes"] == []


def test_dry_run_lists_the_same_changes_and_writes_nothing(project: Path, home: Path) -> None:
    env = user_env(home, POWERCONTEXT_TOKEN="tok-secret")
    args = ("hosts", "install", "claude-code", "--scope", "s:dry", "--url", "http://127.0.0.1:9", "--json")
    planned = pc(*args, "--dry-run", cwd=project, env=env)
    assert planned.returncode == 0, planned.stderr
    assert snapshot(project, home) == {}
    plan = document(planned)
    assert plan["status"] == "planned" and plan["dry_run"] is True
    assert {(c["outcome"], c["applied"], c["dry_run"]) for c in plan["changes"]} == {("dry-run", False, True)}
    assert "tok-secret" not in planned.stdout
    applied = document(pc(*args, "--yes", cwd=project, env=env))
    assert [(c["path"], c["action"]) for c in applied["changes"]] == [(c["path"], c["action"]) for c in plan["changes"]]


@pytest.mark.parametrize("host", ["claude-code", "opencode"])
def test_uninstall_lists_what_it_removes(host: str, project: Path, home: Path) -> None:
    installed = pc("hosts", "install", host, "--scope", "s:u", "--yes", "--json", cwd=project, env=user_env(home))
    assert installed.returncode == 0, installed.stdout
    created = {c["path"] for c in document(installed)["changes"] if c["action"] == "create"}
    planned = document(pc("hosts", "uninstall", host, "--dry-run", "--json", cwd=project, env=user_env(home)))
    assert planned["status"] == "planned" and all(c["outcome"] == "dry-run" for c in planned["changes"])
    done = pc("hosts", "uninstall", host, "--json", cwd=project, env=user_env(home))
    assert done.returncode == 0, done.stdout
    doc = document(done)
    assert doc["command"] == "uninstall" and doc["status"] == "uninstalled"
    assert [c["path"] for c in doc["changes"]] == [c["path"] for c in planned["changes"]]
    removed = {c["path"] for c in doc["changes"] if c["action"] == "remove"}
    assert removed and (host != "claude-code" or str(project / ".powercontext.toml") in removed)
    assert all(c["outcome"] == "applied" for c in doc["changes"])
    assert not any(Path(path).exists() for path in removed)
    assert removed <= created | {str(home / ".claude.json")}
    nothing = document(pc("hosts", "uninstall", host, "--json", cwd=project, env=user_env(home)))
    assert nothing["changes"] == [] and nothing["status"] in ("not-installed", "nothing-to-do")


def test_errors_are_json_with_the_text_modes_exit_codes(project: Path, home: Path) -> None:
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text("{ not json", encoding="utf-8")
    broken = pc("hosts", "install", "claude-code", "--yes", "--json", cwd=project, env=user_env(home))
    assert broken.returncode == 2 and broken.stderr == ""
    error = document(broken)["error"]
    assert error["code"] == "install-error" and "settings.json" in error["message"]
    unknown = pc("hosts", "uninstall", "emacs", "--json", cwd=project, env=user_env(home))
    assert unknown.returncode == 2 and "unknown host" in document(unknown)["error"]["message"]
    # --json never prompts: without --yes the trust is not recorded, and the document says so (exit 1).
    untrusted = pc("hosts", "install", "codex", "--json", cwd=project, env=user_env(home))
    assert untrusted.returncode == 1
    doc = document(untrusted)
    assert doc["error"]["code"] == "trust-not-recorded" and "--yes" in doc["error"]["message"]
    assert {c["outcome"] for c in doc["changes"]} == {"applied", "skipped"}
    assert not (home / ".codex").exists()
