"""``powercontext hosts install|doctor`` (agent-host integration) and ``powercontext mcp``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from powercontext.cli.common import DEFAULT_URL, UrlOption

hosts_app = typer.Typer(no_args_is_help=True, help="Connect Claude Code, Codex, OpenCode and Pi to PowerContext.")
_MARK = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}


@hosts_app.command("install")
def hosts_install(
    host: Annotated[str, typer.Argument(help="claude-code, codex, opencode or pi.")],
    scope: Annotated[
        str | None, typer.Option("--scope", "-s", help="Bind this project to a Scope (writes .powercontext.toml).")
    ] = None,
    project: Annotated[
        Path | None, typer.Option(help="Project directory (default: the git work tree of the current directory).")
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Answer yes to every question.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print every file change; write nothing.")] = False,
) -> None:
    """Register the UserPromptSubmit hook and the MCP server for one project."""
    from powercontext.hosts.install import InstallError, install
    from powercontext.hosts.scope import find_repo_root

    cwd = Path.cwd()
    target = (project or find_repo_root(cwd) or cwd).resolve()
    if host in ("opencode", "pi"):
        _change_extension_host(host, target, scope, dry_run, install=True)
        return
    try:
        report = install(host, target, scope)
    except InstallError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    for path in report.written:
        typer.echo(f"wrote {path}")
    typer.echo(f"next: powercontext hosts doctor   (in {target})")


def _change_extension_host(host: str, target: Path, scope: str | None, dry_run: bool, *, install: bool) -> None:
    """Install or uninstall OpenCode's plugin or Pi's extension: every change printed, then applied."""
    from powercontext.hosts.extension_hosts import plan_install, plan_uninstall
    from powercontext.hosts.project_files import ProjectFileError, apply

    try:
        changes = plan_install(host, target, scope) if install else plan_uninstall(host, target)
    except ProjectFileError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    for change in changes:
        typer.echo(("would " if dry_run else "") + change.describe())
    if not changes:
        typer.echo(f"nothing to do: {host} is not installed in {target}")
    if not dry_run:
        apply(changes)
        if install:
            typer.echo(f"next: powercontext hosts doctor   (in {target})")


@hosts_app.command("uninstall")
def hosts_uninstall(
    host: Annotated[str, typer.Argument(help="opencode or pi.")],
    project: Annotated[
        Path | None, typer.Option(help="Project directory (default: the git work tree of the current directory).")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print every file change; write nothing.")] = False,
) -> None:
    """Remove exactly what `hosts install` added for one host."""
    from powercontext.hosts.scope import find_repo_root

    if host not in ("opencode", "pi"):
        typer.echo(f"error: uninstall supports opencode and pi, not {host!r}", err=True)
        raise typer.Exit(2)
    cwd = Path.cwd()
    _change_extension_host(host, (project or find_repo_root(cwd) or cwd).resolve(), None, dry_run, install=False)


@hosts_app.command("doctor")
def hosts_doctor(
    url: UrlOption = DEFAULT_URL,
    cwd: Annotated[Path | None, typer.Option(help="Directory to check (default: the current one).")] = None,
) -> None:
    """Check the Server, the token, the Scope, the hook registration and the last hook outcome."""
    import os
    from dataclasses import replace

    from powercontext.hosts.doctor import run_checks
    from powercontext.hosts.recall import HookSettings

    settings = replace(HookSettings.from_env(), url=url)
    from powercontext.hosts.extension_hosts import installed_checks
    from powercontext.hosts.scope import find_repo_root

    where = (cwd or Path.cwd()).resolve()
    checks = run_checks(where, settings, Path(os.path.expanduser("~")))
    checks += installed_checks(find_repo_root(where) or where, dict(os.environ))
    width = max(len(c.name) for c in checks)
    for check in checks:
        typer.echo(f"{_MARK[check.status]}  {check.name.ljust(width)}  {check.detail}")
    if any(c.status == "fail" for c in checks):
        raise typer.Exit(1)


def mcp_command(
    url: UrlOption = DEFAULT_URL,
) -> None:
    """Serve the PowerContext MCP tools over stdio (the tools call the Server at --url with POWERCONTEXT_TOKEN)."""
    import os

    from powercontext.mcp.stdio import serve_stdio

    serve_stdio(url, os.environ.get("POWERCONTEXT_TOKEN") or None)
