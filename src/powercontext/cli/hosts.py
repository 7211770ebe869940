"""``powercontext hosts install|uninstall|doctor`` (agent-host integration) and ``powercontext mcp``."""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from powercontext.cli.common import DEFAULT_URL, JsonOption, print_json
from powercontext.cli.hosts_report import HostsReport, project_change_action

if TYPE_CHECKING:
    from powercontext.hosts.adapter import HostContext
    from powercontext.hosts.files import FileChange

hosts_app = typer.Typer(no_args_is_help=True, help="Connect Claude Code, Codex, OpenCode and Pi to PowerContext.")
_MARK = {"ok": "✔", "warn": "!", "fail": "✘"}

HostArg = Annotated[str, typer.Argument(help="claude-code, codex, opencode or pi.")]
EXTENSION_HOSTS = ("opencode", "pi")  # their files are planned by hosts.extension_hosts
ProjectOption = Annotated[
    Path | None, typer.Option(help="Project directory (default: the git work tree of the current directory).")
]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Print every file change; write nothing.")]
ChangesJsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON document listing every change (and any error); nothing else.")
]
YesOption = Annotated[bool, typer.Option("--yes", "-y", help="Record the trust the host requires without asking.")]


def _context(project: Path | None, scope: str | None = None) -> HostContext:
    from powercontext.hosts.adapter import HostContext
    from powercontext.hosts.scope import find_repo_root

    cwd = Path.cwd()
    target = (project or find_repo_root(cwd) or cwd).resolve()
    return HostContext(project=target, home=Path(os.path.expanduser("~")), scope_id=scope)


def _show(changes: list[FileChange], dry_run: bool, report: HostsReport | None = None) -> None:
    if report is not None:
        report.add_file_changes(changes, "dry-run" if dry_run else "applied")
        return
    for change in changes:
        verb = "remove" if change.after is None else ("create" if change.before is None else "update")
        typer.echo(f"{'would ' if dry_run else ''}{verb} {change.path}: {change.why}")
        if dry_run:
            typer.echo(change.diff().rstrip("\n"))


def _consent(trust: list[FileChange], yes: bool) -> bool:
    if not trust or yes:
        return True
    typer.echo("The host runs PowerContext only once you trust it. Install would record:")
    for change in trust:
        typer.echo(f"  {change.path}: {change.why}")
    if not sys.stdin.isatty():
        return False
    return typer.confirm("Record this trust?", default=False)


@hosts_app.command("install")
def hosts_install(
    host: HostArg,
    scope: Annotated[
        str | None, typer.Option("--scope", "-s", help="Bind this project to a Scope (writes .powercontext.toml).")
    ] = None,
    url: Annotated[
        str | None, typer.Option("--url", help="Server URL for this project on this machine (kept outside the repo).")
    ] = None,
    project: ProjectOption = None,
    yes: YesOption = False,
    dry_run: DryRunOption = False,
    as_json: ChangesJsonOption = False,
) -> None:
    """Register the hook and the MCP server for one project, and the trust the host requires."""
    from powercontext.hosts.install import InstallError, apply_plan, plan_install

    ctx = _context(project, scope)
    report = HostsReport("install", host, ctx.project, dry_run) if as_json else None
    if host in EXTENSION_HOSTS:
        _change_extension_host(host, ctx.project, scope, dry_run, install=True, report=report)
        return
    try:
        changes = plan_install(host, ctx, url=url, token=os.environ.get("POWERCONTEXT_TOKEN", "").strip() or None)
    except InstallError as exc:
        raise _error(report, 2, "install-error", str(exc)) from None
    if dry_run:
        _show(changes, dry_run=True, report=report)
        if report is not None:
            report.emit("planned")
        return
    # --json never prompts: trust is recorded only with --yes.
    trust_ok = yes if report is not None else _consent([c for c in changes if c.trust], yes)
    applied, skipped = apply_plan(changes, trust_ok)
    _show(applied, dry_run=False, report=report)
    if report is not None:
        report.add_file_changes(skipped, "skipped")
        report.warnings += _path_warnings()
        if skipped:
            fix = f"powercontext hosts install {host} --yes" + (f" --scope {scope}" if scope else "")
            raise report.fail(1, "trust-not-recorded", f"{host} will not use what it was not trusted with; run: {fix}")
        report.emit("installed" if changes else "already-installed")
        return
    if not changes:
        typer.echo(f"{host} is already installed in {ctx.project}")
    if skipped:
        typer.echo(f"NOT recorded: {host} will not use what it was not trusted with (above) until you run:", err=True)
        typer.echo(f"  powercontext hosts install {host} --yes" + (f" --scope {scope}" if scope else ""), err=True)
        raise typer.Exit(1)
    for line in _path_warnings():
        typer.echo(line, err=True)
    typer.echo(
        f"ready: the next {host} prompt in {ctx.project} gets PowerContext recall (check: powercontext hosts doctor)"
    )


def _path_warnings() -> list[str]:
    if shutil.which("powercontext") is not None:
        return []
    return [
        "warning: `powercontext` is not on PATH; the hook and MCP entries run it from PATH",
        "  fix: activate its venv where you start the host, or: pipx install powercontext",
    ]


def _error(report: HostsReport | None, exit_code: int, error_code: str, message: str) -> typer.Exit:
    if report is not None:
        return report.fail(exit_code, error_code, message)
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(exit_code)


@hosts_app.command("uninstall")
def hosts_uninstall(
    host: HostArg, project: ProjectOption = None, dry_run: DryRunOption = False, as_json: ChangesJsonOption = False
) -> None:
    """Remove exactly what ``hosts install`` added for one host."""
    from powercontext.hosts.install import InstallError, apply_plan, plan_uninstall

    ctx = _context(project)
    report = HostsReport("uninstall", host, ctx.project, dry_run) if as_json else None
    if host in EXTENSION_HOSTS:
        _change_extension_host(host, ctx.project, None, dry_run, install=False, report=report)
        return
    try:
        changes = plan_uninstall(host, ctx)
    except InstallError as exc:
        raise _error(report, 2, "install-error", str(exc)) from None
    if not dry_run:
        apply_plan(changes, trust_ok=True)
    _show(changes, dry_run, report=report)
    if report is not None:
        report.emit(("planned" if dry_run else "uninstalled") if changes else "not-installed")
    elif not changes:
        typer.echo(f"nothing of PowerContext's for {host} in {ctx.project}")


def _change_extension_host(
    host: str, target: Path, scope: str | None, dry_run: bool, *, install: bool, report: HostsReport | None
) -> None:
    """Install or uninstall OpenCode's plugin or Pi's extension: every change printed, then applied."""
    from powercontext.hosts.extension_hosts import plan_install, plan_uninstall
    from powercontext.hosts.project_files import ProjectFileError, apply

    try:
        changes = plan_install(host, target, scope) if install else plan_uninstall(host, target)
    except ProjectFileError as exc:
        raise _error(report, 2, "install-error", str(exc)) from None
    if report is not None:
        for change in changes:
            action = project_change_action(change)
            report.add(change.path, action, change.summary, "dry-run" if dry_run else "applied")
        if not dry_run:
            apply(changes)
        done = ("installed" if install else "uninstalled") if changes else "nothing-to-do"
        report.emit("planned" if dry_run and changes else done)
        return
    for change in changes:
        typer.echo(("would " if dry_run else "") + change.describe())
    if not changes:
        typer.echo(f"nothing to do: {host} is not installed in {target}")
    if not dry_run:
        apply(changes)
        if install:
            typer.echo(f"next: powercontext hosts doctor   (in {target})")


@hosts_app.command("doctor")
def hosts_doctor(
    url: Annotated[
        str | None, typer.Option("--url", help="Server base URL (default: as the hook resolves it).")
    ] = None,
    cwd: Annotated[Path | None, typer.Option(help="Directory to check (default: the current one).")] = None,
    host: Annotated[list[str] | None, typer.Option("--host", help="Check only this host (repeatable).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Check the Server, token, Scope, each installed host's hook, trust and MCP server, and the last hook run."""

    from powercontext.hosts.doctor import run_checks
    from powercontext.hosts.extension_hosts import installed_checks
    from powercontext.hosts.hook import settings_for
    from powercontext.hosts.recall import HookSettings
    from powercontext.hosts.registry import ADAPTERS
    from powercontext.hosts.scope import find_repo_root

    for name in host or []:
        if name not in ADAPTERS and name not in EXTENSION_HOSTS:
            choices = ", ".join([*ADAPTERS, *EXTENSION_HOSTS])
            typer.echo(f"error: unknown host {name!r}; choose one of {choices}", err=True)
            raise typer.Exit(2)
    where = (cwd or Path.cwd()).resolve()
    settings = settings_for(HookSettings.from_env(), where)
    if url:
        settings = settings._replace(url=url)
    hook_hosts = [h for h in host or [] if h in ADAPTERS]
    checks = run_checks(where, settings, Path(os.path.expanduser("~")), hook_hosts or None)
    if not host or any(h in EXTENSION_HOSTS for h in host):
        checks += installed_checks(find_repo_root(where) or where, dict(os.environ))
    if as_json:
        print_json({"checks": [dataclasses.asdict(c) for c in checks]})
    else:
        width = max(len(c.name) for c in checks)
        for check in checks:
            typer.echo(f"{_MARK[check.status]} {check.name.ljust(width)}  {check.detail}")
            if check.status == "fail" and check.fix:
                typer.echo(f"  {' ' * width} fix: {check.fix}")
    if any(c.status == "fail" for c in checks):
        raise typer.Exit(1)


def mcp_command(
    url: Annotated[str | None, typer.Option("--url", envvar="POWERCONTEXT_URL", help="Server base URL.")] = None,
) -> None:
    """Serve the PowerContext MCP tools over stdio (the tools call the Server at --url with POWERCONTEXT_TOKEN).

    Without --url/POWERCONTEXT_URL (and POWERCONTEXT_TOKEN), the URL and token ``hosts install`` recorded
    for the project in the current directory are used, as the hook does."""
    from powercontext.hosts.hook import settings_for
    from powercontext.hosts.recall import HookSettings
    from powercontext.mcp.stdio import serve_stdio

    settings = settings_for(HookSettings.from_env(), Path.cwd())
    serve_stdio(url or settings.url or DEFAULT_URL, settings.token)
