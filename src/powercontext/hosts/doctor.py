"""``powercontext hosts doctor``: is automatic recall going to work here, and did it last time?"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from powercontext.hosts.diagnostics import read_state
from powercontext.hosts.install import registered_hooks
from powercontext.hosts.recall import HookSettings
from powercontext.hosts.scope import ScopeConfigError, find_repo_root, resolve_scope
from powercontext.hosts.transport import TransportFailure


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok | warn | fail
    detail: str


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


def run_checks(cwd: Path, settings: HookSettings, home: Path) -> list[Check]:
    checks: list[Check] = []
    try:
        status, _ = _get(settings, "/health/ready")
        checks.append(Check("server", "ok" if status == 200 else "fail", f"{settings.url} answered {status}"))
        reachable = status == 200
    except TransportFailure:
        hint = "start it with `powercontext server run`"
        checks.append(Check("server", "fail", f"no answer from {settings.url}; {hint}"))
        reachable = False
    try:
        resolution = resolve_scope(cwd)
        checks.append(Check("scope", "ok", f"{resolution.scope_id} (from {resolution.source})"))
        scope_id: str | None = resolution.scope_id
    except ScopeConfigError as exc:
        checks.append(Check("scope", "fail", str(exc)))
        scope_id = None
    if reachable and scope_id is not None:
        status, code = _get(settings, f"/v1/scopes/{quote(scope_id, safe=':@+=~.-_')}")
        if status == 200:
            checks.append(Check("token", "ok", "accepted" if settings.token else "not needed (no access file)"))
            checks.append(Check("scope-exists", "ok", "readable with this token"))
        elif status == 401:
            checks.append(Check("token", "fail", "rejected: set POWERCONTEXT_TOKEN to a token in the access file"))
        elif status == 403:
            checks.append(Check("token", "ok", "accepted"))
            checks.append(Check("scope-exists", "fail", "this token may not read the Scope; ask for a grant"))
        else:
            checks.append(Check("token", "ok", "accepted" if settings.token else "not needed"))
            hint = f"create it: powercontext scope create {scope_id} --title ..."
            checks.append(Check("scope-exists", "fail", f"{code or status}: {hint}"))
    project = find_repo_root(cwd) or cwd
    for host, path in registered_hooks(project, home).items():
        if path is None:
            checks.append(Check(f"{host}-hook", "warn", f"not registered; run `powercontext hosts install {host}`"))
        else:
            checks.append(Check(f"{host}-hook", "ok", f"registered in {path}"))
    last = read_state(settings)
    if last is None:
        checks.append(Check("last-hook-run", "warn", "none recorded yet"))
    else:
        outcome = str(last.get("outcome"))
        detail = f"{last.get('host')}: {outcome} ({last.get('reason')}, {last.get('duration_ms')} ms)"
        checks.append(Check("last-hook-run", "ok" if outcome in ("injected", "empty") else "warn", detail))
    return checks
