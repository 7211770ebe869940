"""Bearer tokens to principals, and the per-Scope check every ``/v1/scopes/{scope_id}`` route runs.

Opt-in: without ``POWERCONTEXT_ACCESS_FILE`` every request acts as ``OPEN_ACCESS``. The file lists
principals by the SHA-256 of their token, so it holds no secret; tokens are never logged.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
from pathlib import Path
from typing import Any

from fastapi import Request

from powercontext.domain.access import OPEN_ACCESS, Principal, ScopeForbidden, Unauthenticated
from powercontext.domain.errors import RequestRefused

# POST routes under a Scope that only read.
_READ_ONLY_POSTS = ("/search", "/query")
# POST routes under a Scope that read the Server's file system: they need the index grant, not write.
_INDEX_POSTS = ("/code/index",)


class AccessFileError(ValueError):
    """The access file is unreadable or malformed; the message says where, never a token."""


def refuse_loose_permissions(path: Path) -> None:
    """Refuse an access file that someone else could rewrite, as ssh refuses a loose ``authorized_keys``: whoever
    can write it (or replace it in its directory) can grant themselves every Scope. POSIX only."""
    if os.name != "posix":
        return
    try:
        file_stat = path.stat()
        directory_stat = path.resolve().parent.stat()
    except OSError as exc:
        raise AccessFileError(f"cannot be read ({type(exc).__name__})") from None
    mode = stat.S_IMODE(file_stat.st_mode)
    if mode & 0o022:
        who = " and ".join(w for w, bit in (("group", 0o020), ("others", 0o002)) if mode & bit)
        raise AccessFileError(
            f"{path} is writable by {who} (mode {mode:04o}), so anyone who can write it can grant themselves "
            f"access; fix: chmod go-w {path}"
        )
    if file_stat.st_uid not in (os.getuid(), 0):
        raise AccessFileError(
            f"{path} is owned by uid {file_stat.st_uid}, neither this user nor root; fix: chown {os.getuid()} {path}"
        )
    directory_mode = stat.S_IMODE(directory_stat.st_mode)
    if directory_mode & 0o022 and not directory_mode & stat.S_ISVTX:
        parent = path.resolve().parent
        raise AccessFileError(
            f"its directory {parent} is writable by others (mode {directory_mode:04o}), so the file can be "
            f"replaced; fix: chmod go-w {parent}, or move the file to a directory only you can write"
        )


_GRANTS = ("read", "write", "index", "delete")
_PRINCIPAL_KEYS = frozenset({"name", "token_sha256", "metrics", *_GRANTS})


def _patterns(entry: dict[str, Any], grant: str, where: str) -> tuple[str, ...]:
    """A grant's Scope patterns: a list of exact Scope ids, prefixes ending in ``*``, or ``*`` alone.

    Anything else is refused, never read loosely: ``"write": "project:*"`` (a string, not a list) read as a
    sequence of characters would include the pattern ``*``, every Scope."""
    value = entry.get(grant, [])
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise AccessFileError(f'{where}: "{grant}" must be a list of Scope patterns, e.g. ["project:*"]')
    for pattern in value:
        if not pattern or pattern != pattern.strip() or "*" in pattern[:-1]:
            raise AccessFileError(
                f'{where}: "{grant}" has {json.dumps(pattern)}; a pattern is an exact Scope id, a prefix ending in '
                '"*", or "*" alone'
            )
    return tuple(value)


def _principal(entry: Any, i: int) -> tuple[str, Principal]:
    """One ``principals`` entry as (token digest, principal); refuses what it does not understand."""
    where = f"principal {i}"
    if not isinstance(entry, dict):
        raise AccessFileError(f"{where} must be an object")
    unknown = sorted(set(entry) - _PRINCIPAL_KEYS)
    if unknown:
        allowed = ", ".join(sorted(_PRINCIPAL_KEYS))
        raise AccessFileError(f"{where} has unknown key(s) {', '.join(map(json.dumps, unknown))}; allowed: {allowed}")
    name, digest = entry.get("name"), entry.get("token_sha256")
    if not isinstance(name, str) or not name.strip() or not isinstance(digest, str):
        raise AccessFileError(f"{where} needs a name and a token_sha256 (strings)")
    digest = digest.removeprefix("sha256:").lower()
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise AccessFileError(f"{where}: token_sha256 must be 64 hex digits")
    metrics = entry.get("metrics", False)
    if not isinstance(metrics, bool):
        raise AccessFileError(f"{where}: metrics must be true or false")
    read, write, index, delete = (_patterns(entry, grant, where) for grant in _GRANTS)
    return digest, Principal(name, read, write, index, metrics=metrics, delete=delete)


class AccessTable:
    def __init__(self, principals: dict[str, Principal]) -> None:
        self._by_digest = principals

    @classmethod
    def load(cls, path: Path) -> AccessTable:
        """``{"principals": [{"name", "token_sha256", "read": [patterns], "write": [patterns],
        "index": [patterns], "delete": [patterns], "metrics": bool}]}``; anything else is refused."""
        refuse_loose_permissions(path)
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise AccessFileError(f"cannot be read as JSON ({type(exc).__name__})") from None
        entries = data.get("principals") if isinstance(data, dict) else None
        if not isinstance(entries, list) or not entries:
            raise AccessFileError('needs a non-empty "principals" list')
        if set(data) != {"principals"}:
            unknown = ", ".join(json.dumps(k) for k in sorted(set(data) - {"principals"}))
            raise AccessFileError(f'has unknown key(s) {unknown}; it holds only "principals"')
        table: dict[str, Principal] = {}
        for i, entry in enumerate(entries):
            digest, principal = _principal(entry, i)
            if digest in table:
                raise AccessFileError(f"principal {i}: the same token is listed twice")
            table[digest] = principal
        return cls(table)

    def principal_for(self, authorization: str | None) -> Principal | None:
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        digest = hashlib.sha256(token.strip().encode("utf-8")).hexdigest()
        for known, principal in self._by_digest.items():
            if hmac.compare_digest(known, digest):
                return principal
        return None


def current_principal(request: Request) -> Principal:
    table: AccessTable | None = request.app.state.access
    if table is None:
        return OPEN_ACCESS
    principal = table.principal_for(request.headers.get("authorization"))
    if principal is None:
        raise Unauthenticated()
    return principal


def authorize(request: Request) -> Principal:
    """Route dependency: an authenticated caller, allowed to read, write or index into the path's Scope if
    it names one."""
    principal = current_principal(request)
    scope_id = request.path_params.get("scope_id")
    if scope_id is not None:
        post = request.method == "POST"
        if request.method == "DELETE":  # only DELETE /v1/scopes/{scope_id} exists: the Scope and all in it
            if not principal.can_delete(scope_id):
                raise ScopeForbidden("delete", grant="delete")
            return principal
        if post and request.url.path.endswith(_INDEX_POSTS):
            if not principal.can_index(scope_id):
                raise ScopeForbidden("index code into", grant="index")
            return principal
        reads = request.method in ("GET", "HEAD") or (post and request.url.path.endswith(_READ_ONLY_POSTS))
        if reads and not principal.can_read(scope_id):
            raise ScopeForbidden("read", grant="read")
        if not reads and not principal.can_write(scope_id):
            raise ScopeForbidden("write", grant="write")
    return principal


async def authorized(request: Request) -> Principal:
    """``authorize`` as a route dependency. ``async`` so FastAPI runs it on the event loop: it never blocks, and a
    plain ``def`` dependency would cost every request a worker-thread hand-off."""
    return authorize(request)


def refusal_before_validation(request: Request) -> RequestRefused | None:
    """The 401/403 a request would get from ``authorize``, for a request whose body failed to parse.

    FastAPI reads and validates the body before it runs route dependencies, so without this a caller
    with no token (or no grant) would learn from a 422 what the route expects. The error handlers ask
    this first; routes without the ``authorize`` dependency (health probes) are left alone.
    ``app.state.authorized_routes`` holds the ids of the routes that have it (set by ``create_app``).
    """
    authorized: frozenset[int] = getattr(request.app.state, "authorized_routes", frozenset())
    if id(request.scope.get("route")) not in authorized:
        return None
    try:
        authorize(request)
    except RequestRefused as exc:
        return exc
    return None
