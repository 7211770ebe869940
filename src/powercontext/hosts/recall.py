"""Automatic recall for one prompt: the plain prepare request, the strict validator, fail-open outcomes.

The records here are ``NamedTuple``s, not dataclasses: ``dataclasses`` imports ``inspect`` (and with it
``ast``, ``dis``, ``tokenize``), about 10 ms of CPU that every hook process would pay before its request.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from powercontext.hosts.query import derive_query
from powercontext.hosts.scope import ScopeConfigError, resolve_scope
from powercontext.hosts.transport import HttpAnswer, TransportFailure, post_json
from powercontext.hosts.validate import InvalidPreparedContext, validate_prepared_context
from powercontext.server_url import DEFAULT_URL

if TYPE_CHECKING:
    from collections.abc import Mapping

PREPARE_PATH = "/v1/context/prepare"
DEFAULT_TIMEOUT_MS = 1500
DEFAULT_MAX_BYTES = 8000
_ERROR_CODE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")


class HookSettings(NamedTuple):
    """What the hook reads from its environment (a repository can set only ``scope_id`` and ``max_bytes``)."""

    url: str = DEFAULT_URL
    token: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_MS / 1000
    max_bytes: int | None = None  # None: the repository's, else DEFAULT_MAX_BYTES
    diagnostics: bool = False
    state_dir: Path | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> HookSettings:
        env = os.environ if env is None else env
        return cls(
            url=env.get("POWERCONTEXT_URL", "").strip() or DEFAULT_URL,
            token=env.get("POWERCONTEXT_TOKEN", "").strip() or None,
            timeout_s=_bounded_int(env.get("POWERCONTEXT_HOOK_TIMEOUT_MS"), DEFAULT_TIMEOUT_MS, 50, 60000) / 1000,
            max_bytes=_bounded_int(env.get("POWERCONTEXT_HOOK_MAX_BYTES"), 0, 512, 32768) or None,
            diagnostics=env.get("POWERCONTEXT_HOOK_DIAGNOSTICS", "").strip().lower() in ("1", "true", "yes", "on"),
            state_dir=Path(env["POWERCONTEXT_HOOK_STATE_DIR"]) if env.get("POWERCONTEXT_HOOK_STATE_DIR") else None,
        )

    def resolved_state_dir(self, env: Mapping[str, str] | None = None) -> Path:
        if self.state_dir is not None:
            return self.state_dir
        env = os.environ if env is None else env
        base = env.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
        return Path(base) / "powercontext"


def _bounded_int(raw: str | None, default: int, low: int, high: int) -> int:
    try:
        value = int(raw) if raw is not None and raw.strip() else default
    except ValueError:
        return default
    return min(max(value, low), high) if value else default


class RecallOutcome(NamedTuple):
    """What happened. ``content`` is set only for ``injected``; every other field is content-free."""

    outcome: str  # injected | empty | skipped | server_unavailable | version_mismatch | invalid_response | refused
    reason: str = "none"
    http_status: int | None = None
    context_status: str | None = None
    content_bytes: int | None = None
    error_code: str | None = None
    content: str | None = None

    @property
    def injected(self) -> bool:
        return self.outcome == "injected"


class RecallRequest(NamedTuple):
    scope_id: str
    query: str
    max_bytes: int


def plan_recall(prompt: str, cwd: Path, settings: HookSettings, env: Mapping[str, str] | None = None) -> RecallRequest:
    """Scope, bounded query and budget for one prompt; ``ScopeConfigError`` or an empty query means skip."""
    resolution = resolve_scope(cwd, env)
    repo_bytes = resolution.config.max_bytes if resolution.config is not None else None
    max_bytes = settings.max_bytes or repo_bytes or DEFAULT_MAX_BYTES
    return RecallRequest(resolution.scope_id, derive_query(prompt), max_bytes)


def _error_code(answer: HttpAnswer) -> str | None:
    try:
        code = json.loads(answer.body)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None
    return code if isinstance(code, str) and _ERROR_CODE.match(code) else None


def classify(answer: HttpAnswer, max_bytes: int) -> RecallOutcome:
    """Map one HTTP answer to an outcome; only a valid ``ready`` answer carries content."""
    status = answer.status
    if 300 <= status < 400:
        return RecallOutcome("invalid_response", "redirect", status)
    if status >= 500:
        return RecallOutcome("server_unavailable", "http_5xx", status, error_code=_error_code(answer))
    if status >= 400:
        code = _error_code(answer)
        if (status == 404 and code is None) or code == "not-found":
            # No such route: an older Server. Never fall back to anything else.
            return RecallOutcome("version_mismatch", "no_prepare_route", status)
        return RecallOutcome("refused", "http_4xx", status, error_code=code)
    if status != 200:
        return RecallOutcome("invalid_response", "unexpected_status", status)
    try:
        valid = validate_prepared_context(answer.body, max_bytes)
    except InvalidPreparedContext as exc:
        return RecallOutcome("invalid_response", exc.reason, status)
    if valid.status == "empty":
        return RecallOutcome("empty", "none", status, "empty", 0)
    return RecallOutcome("injected", "none", status, "ready", valid.content_bytes, content=valid.content)


def recall(request: RecallRequest, settings: HookSettings, timeout_s: float | None = None) -> RecallOutcome:
    """Send the RFC's plain request (``scope_id``, ``query``, ``max_bytes``; never ``include_receipt``)."""
    if not request.query:
        return RecallOutcome("skipped", "empty_query")
    body = {"scope_id": request.scope_id, "query": request.query, "max_bytes": request.max_bytes}
    try:
        answer = post_json(
            settings.url,
            PREPARE_PATH,
            body,
            token=settings.token,
            timeout_s=settings.timeout_s if timeout_s is None else timeout_s,
        )
    except TransportFailure as exc:
        if exc.kind in ("too_large", "bad_http"):
            return RecallOutcome("invalid_response", exc.kind)
        return RecallOutcome("server_unavailable", exc.kind)
    return classify(answer, request.max_bytes)


def recall_for_prompt(
    prompt: str, cwd: Path, settings: HookSettings, env: Mapping[str, str] | None = None
) -> tuple[RecallOutcome, RecallRequest | None]:
    try:
        request = plan_recall(prompt, cwd, settings, env)
    except ScopeConfigError:
        return RecallOutcome("skipped", "scope_config"), None
    return recall(request, settings), request
