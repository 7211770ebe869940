"""``powercontext hosts install|uninstall|doctor`` (agent-host integration) and ``powercontext mcp``."""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from powercontext.cli.common import DEFAULT_URL, JsonOption, checked_url, print_json
from powercontext.cli.hosts_report import HostsReport
from powercontext.cli.terminal import say
from powercontext.hosts.capture import capture_notice
from powercontext.hosts.registry import names_text, titles_text

if TYPE_CHECKING:
    from powercontext.hosts.adapter import HostContext
    from powercontext.hosts.files import FileChange

hosts_app = typer.Typer(no_args_is_help=True, help=f"Connect {titles_text()} to PowerContext.")
_MARK = {"ok": "✔", "warn": "!", "fail": "✘"}

HostArg = Annotated[str, typer.Argument(help=f"{names_text('or')}.")]
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
        say(f"{'would ' if dry_run else ''}{verb} {change.path}: {change.why}")
        if dry_run:
            say(change.diff().rstrip("\n"))


def _consent(trust: list[FileChange], yes: bool) -> bool:
    if not trust or yes:
        return True
    say("The host runs PowerContext only once you trust it. Install would record:")
    for change in trust:
        say(f"  {change.path}: {change.why}")
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
    _check_host(host, report)
    url = _install_url(url, report)
    try:
        changes = plan_install(host, ctx, url=url, token=os.environ.get("POWERCONTEXT_TOKEN", "").strip() or None)
    except InstallError as exc:
        raise _error(report, 2, "install-error", str(exc)) from None
    if dry_run:
        _show(changes, dry_run=True, report=report)
        # The dry run warns exactly as the real install does.
        if report is not None:
            report.warnings += _path_warnings(host)
            report.emit("planned")
        else:
            for line in _path_warnings(host):
                say(line, err=True)
        return
    # --json never prompts: trust is recorded only with --yes.
    trust_ok = yes if report is not None else _consent([c for c in changes if c.trust], yes)
    try:
        applied, skipped = apply_plan(changes, trust_ok)
    except InstallError as exc:
        raise _error(report, 2, "install-error", str(exc)) from None
    _show(applied, dry_run=False, report=report)
    if report is not None:
        report.add_file_changes(skipped, "skipped")
        report.warnings += _path_warnings(host)
        if skipped:
            fix = f"powercontext hosts install {host} --yes" + (f" --scope {scope}" if scope else "")
            raise report.fail(1, "trust-not-recorded", f"{host} will not use what it was not trusted with; run: {fix}")
        report.emit("installed" if changes else "already-installed")
        return
    if not changes:
        say(f"{host} is already installed in {ctx.project}")
    if skipped:
        say(f"NOT recorded: {host} will not use what it was not trusted with (above) until you run:", err=True)
        say(f"  powercontext hosts install {host} --yes" + (f" --scope {scope}" if scope else ""), err=True)
        raise typer.Exit(1)
    for line in _path_warnings(host):
        say(line, err=True)
    say(f"ready: the next {host} prompt in {ctx.project} gets PowerContext recall (check: powercontext hosts doctor)")
    say(capture_notice(host, scope))


def _path_warnings(host: str) -> list[str]:
    """Warnings about what the host will run from PATH (the same for the dry run and the real install)."""
    from powercontext.hosts.machine import install_this_checkout, machine_hook_needed
    from powercontext.hosts.registry import spec_for

    if not machine_hook_needed(os.environ):
        return []
    where = "is not on PATH" if shutil.which("powercontext") is None else "is on PATH only in this virtualenv"
    fix = f"  fix: {install_this_checkout()}"
    spec = spec_for(host)
    if spec.kind == "extension":
        # The plugin runs the hook with the interpreter install records for this machine.
        lines = [
            f"note: `powercontext` {where}; the plugin runs the hook with {sys.executable} (recorded for this machine)"
        ]
    else:
        lines = [
            f"note: `powercontext` {where}; on this machine the {host} hook runs {sys.executable} (named only in "
            "this machine's config); the committed hook runs `powercontext` from PATH, for machines that have it"
        ]
    if spec.mcp:
        lines += ["warning: the MCP server entry runs `powercontext` from PATH; it will not start until it is", fix]
    return lines


def _error(report: HostsReport | None, exit_code: int, error_code: str, message: str) -> typer.Exit:
    if report is not None:
        return report.fail(exit_code, error_code, message)
    say(f"error: {error_code}: {message}", err=True)
    return typer.Exit(exit_code)


def _install_url(url: str | None, report: HostsReport | None) -> str | None:
    """``--url``, else the installer's ``POWERCONTEXT_URL`` (recorded like its ``POWERCONTEXT_TOKEN``: the host may
    not pass it on), checked as every command checks it (``invalid-url``, exit 2) before anything is written."""
    from powercontext.server_url import BadServerUrl, check_server_url

    given = url or os.environ.get("POWERCONTEXT_URL", "").strip() or None
    try:
        return check_server_url(given) if given is not None else None
    except BadServerUrl as exc:
        raise _error(report, 2, "invalid-url", str(exc)) from None


def _check_host(host: str, report: HostsReport | None = None) -> None:
    """Refuse a host name the registry lacks (exit 2), offering the nearest one."""
    from powercontext.cli.choices import nearest_word
    from powercontext.hosts.registry import HOSTS

    if host in HOSTS:
        return
    near = nearest_word(host, HOSTS)
    choose = f"did you mean {near}? (choose one of {names_text()})" if near else f"choose one of {names_text()}"
    raise _error(report, 2, "unknown-host", f"unknown host {host!r}; {choose}")


@hosts_app.command("uninstall")
def hosts_uninstall(
    host: HostArg, project: ProjectOption = None, dry_run: DryRunOption = False, as_json: ChangesJsonOption = False
) -> None:
    """Remove exactly what ``hosts install`` added for one host."""
    from powercontext.hosts.install import InstallError, apply_plan, plan_uninstall

    ctx = _context(project)
    report = HostsReport("uninstall", host, ctx.project, dry_run) if as_json else None
    _check_host(host, report)
    try:
        changes = plan_uninstall(host, ctx)
        if not dry_run:
            apply_plan(changes, trust_ok=True)
    except InstallError as exc:
        raise _error(report, 2, "install-error", str(exc)) from None
    _show(changes, dry_run, report=report)
    if report is not None:
        report.emit(("planned" if dry_run else "uninstalled") if changes else "not-installed")
    elif not changes:
        say(f"nothing to do: nothing of PowerContext's for {host} in {ctx.project}")


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
    from powercontext.hosts.hook import settings_for
    from powercontext.hosts.recall import HookSettings

    for name in host or []:
        _check_host(name)
    where = (cwd or Path.cwd()).resolve()
    settings = settings_for(HookSettings.from_env(), where)
    # --url and POWERCONTEXT_URL are checked as every command checks them; a URL recorded by `hosts install`
    # is the doctor's to diagnose (its "server" check).
    given = url or os.environ.get("POWERCONTEXT_URL", "").strip()
    if given:
        settings = settings._replace(url=checked_url(given))
    checks = run_checks(where, settings, Path(os.path.expanduser("~")), host or None, dict(os.environ))
    if as_json:
        print_json({"checks": [dataclasses.asdict(c) for c in checks]})
    else:
        width = max(len(c.name) for c in checks)
        for check in checks:
            say(f"{_MARK[check.status]} {check.name.ljust(width)}  {check.detail}")
            if check.status != "ok" and check.fix:
                say(f"  {' ' * width} fix: {check.fix}")
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
