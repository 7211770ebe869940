"""``powercontext hosts doctor``: will automatic recall work here, per host, and did it last time?

Common checks (the Server answers, the token is accepted, the Scope resolves and exists, the last hook
outcome), then each installed host's own (``HostAdapter.checks``): hook present and trusted, its command
resolvable, the MCP server approved, configured with its environment and answering ``initialize``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

from powercontext.hosts.adapter import Check, HostContext
from powercontext.hosts.diagnostics import read_state
from powercontext.hosts.files import InstallError
from powercontext.hosts.recall import HookSettings
from powercontext.hosts.registry import HOSTS, adapter_for
from powercontext.hosts.scope import CONFIG_FILE, ScopeConfigError, find_repo_root, resolve_scope
from powercontext.hosts.transport import TransportFailure
from powercontext.text.urls import mask_credentials

__all__ = ["Check", "run_checks"]


def _get(settings: HookSettings, path: str) -> tuple[int, str | None]:
    """GET with the hook's own limits; returns (status, error code)."""
    import httpx

    headers = {"Authorization": f"Bearer {settings.token}"} if settings.token else {}
    try:
        response = httpx.get(settings.url.rstrip("/") + path, headers=headers, timeout=max(settings.timeout_s, 2.0))
    except httpx.HTTPError as exc:
        raise TransportFailure("unavailable") from exc
    code = None
    if response.status_code >= 400:
        try:
            code = str(json.loads(response.content)["error"]["code"])
        except (ValueError, KeyError, TypeError):
            code = None
    return response.status_code, code


def _server_checks(settings: HookSettings, scope_id: str | None) -> list[Check]:
    from powercontext.server_url import BadServerUrl, check_server_url

    try:
        check_server_url(settings.url)
    except BadServerUrl as exc:  # a URL recorded by an older install, or a hand-edited hosts.json
        return [Check("server", "fail", f"invalid-url: {exc}", "powercontext hosts install HOST --url URL")]
    try:
        status, _ = _get(settings, "/health/ready")
    except TransportFailure:
        return [Check("server", "fail", f"no answer from {settings.url}", "powercontext server run")]
    if status != 200:
        return [_not_ready(settings, status)]
    checks = [Check("server", "ok", f"{settings.url} answered 200")]
    if scope_id is None:
        return checks
    status, code = _get(settings, f"/v1/scopes/{quote(scope_id, safe=':@+=~.-_')}")
    token_fix = "export POWERCONTEXT_TOKEN=<a token from the access file>, then run install again"
    if status == 200:
        checks.append(Check("token", "ok", "accepted" if settings.token else "not needed (no access file)"))
        checks.append(Check("scope-exists", "ok", "readable with this token"))
    elif status == 401:
        checks.append(Check("token", "fail", "rejected by the Server", token_fix))
    elif status == 403:
        checks.append(Check("token", "ok", "accepted"))
        checks.append(Check("scope-exists", "fail", "this token may not read the Scope", "ask for a read grant"))
    else:
        checks.append(Check("token", "ok", "accepted" if settings.token else "not needed"))
        fix = f"powercontext scope create {scope_id} --title '...'"
        checks.append(Check("scope-exists", "fail", f"{code or status}", fix))
    return checks


def _not_ready(settings: HookSettings, status: int) -> Check:
    """The Server answers but is not ready: its readiness body says why (e.g. ``store-full``) and what to do."""
    import httpx

    try:
        body = httpx.get(settings.url.rstrip("/") + "/health/ready", timeout=max(settings.timeout_s, 2.0)).json()
        reason, message = str(body["reason"]), str(body["message"])
    except (httpx.HTTPError, ValueError, KeyError, TypeError):
        return Check("server", "fail", f"{settings.url} answered {status}", "powercontext server run")
    return Check("server", "fail", f"{settings.url} is not ready: {reason}", message)


def run_checks(
    cwd: Path, settings: HookSettings, home: Path, hosts: list[str] | None = None, env: dict[str, str] | None = None
) -> list[Check]:
    """The common checks, then those of each host in ``hosts`` (default: every host installed here)."""
    project = find_repo_root(cwd) or cwd
    checks: list[Check] = []
    try:
        resolution = resolve_scope(cwd)
        scope_check = Check("scope", "ok", f"{resolution.scope_id} (from {resolution.source})")
        scope_id: str | None = resolution.scope_id
    except ScopeConfigError as exc:
        fix = (
            f"edit {CONFIG_FILE}"
            if str(exc).startswith(CONFIG_FILE)
            else "powercontext hosts install HOST --scope SCOPE"
        )
        scope_check = Check("scope", "fail", str(exc), fix)
        scope_id = None
    checks += _server_checks(settings, scope_id)
    checks.append(scope_check)
    if scope_id is not None:
        config = resolution.config
        checks.append(_capture_check(settings, config.capture if config else None, config.unknown if config else ()))
    else:  # the hook captures nothing where no Scope resolves: say so, and why, rather than nothing
        checks.append(Check("capture", "warn", "off: no Scope resolves here (see scope)"))
    ctx = HostContext(project=project, home=home, server_url=settings.url)
    if env is not None:
        ctx = HostContext(project=project, home=home, env=env, server_url=settings.url)
    wanted = hosts or [name for name in HOSTS if adapter_for(name).installed(ctx)]
    if not wanted:
        checks.append(Check("hosts", "warn", "no host installed here", "powercontext hosts install claude-code"))
    for name in wanted:
        try:
            checks += adapter_for(name).checks(ctx)
        except InstallError as exc:  # a host config file it cannot read
            checks.append(Check(name, "fail", str(exc), f"powercontext hosts install {name} --yes"))
    checks.append(_last_run(settings, scope_id))
    # The URL may carry a proxy's user and password (--url, POWERCONTEXT_URL): no check repeats them.
    return [_masked(check) for check in checks]


def _masked(check: Check) -> Check:
    fix = mask_credentials(check.fix) if check.fix is not None else None
    return Check(check.name, check.status, mask_credentials(check.detail), fix)


def _capture_check(settings: HookSettings, config_capture: bool | None, unknown: tuple[str, ...] = ()) -> Check:
    """Whether prompts are captured here, and how many captured Sources the Server has not extracted yet."""
    from powercontext.hosts.capture import CAPTURE_ENV, capture_on, env_capture
    from powercontext.hosts.scope import unknown_key_message

    if unknown:  # maybe a misspelt capture = false: capture stays off until the file says only what it may
        return Check("capture", "warn", f"off: {unknown_key_message(unknown[0])}", f"edit {CONFIG_FILE}")

    if env_capture() == "unrecognised":
        value = os.environ.get(CAPTURE_ENV, "").strip()
        shown = value if len(value) <= 40 else value[:40] + "…"
        fix = f"export {CAPTURE_ENV}=off to keep capture off (or on); the words are on/off, 1/0, true/false, yes/no"
        return Check("capture", "warn", f"off: {CAPTURE_ENV}={shown!r} is not an on or off word", fix)
    if not capture_on(config_capture):
        return Check("capture", "ok", "off (POWERCONTEXT_CAPTURE=off or capture = false in .powercontext.toml)")
    import httpx

    headers = {"Authorization": f"Bearer {settings.token}"} if settings.token else {}
    try:
        answer = httpx.get(settings.url.rstrip("/") + "/v1/capabilities", headers=headers, timeout=2.0).json()
        extraction = answer.get("extraction") or {}
        pending, extractor = int(extraction["pending_sources"]), str(extraction["extractor"])
    except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError):
        return Check("capture", "warn", "on, but the Server does not report extraction (an older Server?)")
    how = "explicit statements only (no generation model)" if extractor == "explicit" else "by the generation model"
    return Check("capture", "ok", f"on; extracted {how}; {pending} Source(s) pending on this Server, all Scopes")


def _last_run(settings: HookSettings, scope_id: str | None) -> Check:
    last = read_state(settings)
    if last is None:
        return Check("last-hook-run", "warn", "none recorded yet")
    ran_for = last.get("scope_id")
    if scope_id is not None and ran_for is not None and ran_for != scope_id:
        return Check("last-hook-run", "ok", f"none recorded for {scope_id} since the last hook run (another Scope's)")
    outcome = str(last.get("outcome"))
    detail = f"{last.get('host')}: {outcome} ({last.get('reason')}, {last.get('duration_ms')} ms)"
    return Check("last-hook-run", "ok" if outcome in ("injected", "empty") else "warn", detail)
