"""``powercontext hosts install|doctor`` (agent-host integration) and ``powercontext mcp``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from powercontext.cli.common import DEFAULT_URL, UrlOption

hosts_app = typer.Typer(no_args_is_help=True, help="Connect Claude Code and Codex to PowerContext.")
_MARK = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}


@hosts_app.command("install")
def hosts_install(
    host: Annotated[str, typer.Argument(help="claude-code or codex.")],
    scope: Annotated[
        str | None, typer.Option("--scope", "-s", help="Bind this project to a Scope (writes .powercontext.toml).")
    ] = None,
    project: Annotated[
        Path | None, typer.Option(help="Project directory (default: the git work tree of the current directory).")
    ] = None,
) -> None:
    """Register the UserPromptSubmit hook and the MCP server for one project."""
    from powercontext.hosts.install import InstallError, install
    from powercontext.hosts.scope import find_repo_root

    cwd = Path.cwd()
    target = (project or find_repo_root(cwd) or cwd).resolve()
    try:
        report = install(host, target, scope)
    except InstallError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    for path in report.written:
        typer.echo(f"wrote {path}")
    typer.echo(f"next: powercontext hosts doctor   (in {target})")


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
    checks = run_checks((cwd or Path.cwd()).resolve(), settings, Path(os.path.expanduser("~")))
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

    try:
        from powercontext.mcp.stdio import serve_stdio
    except ImportError:
        typer.echo("error: the MCP server needs the 'mcp' extra: pip install 'powercontext[mcp]'", err=True)
        raise typer.Exit(2) from None
    serve_stdio(url, os.environ.get("POWERCONTEXT_TOKEN") or None)
