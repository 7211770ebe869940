"""Capture from hook hosts: the user's prompt and the agent's final answer become Sources, fail-open.

The prompt is sent beside the recall request (on its own thread, started first), so capture adds no round trip
to the prompt: the hook waits for it at most ``CAPTURE_WAIT_S`` after recall has answered, then exits either way
(a Source not stored in time is lost, never retried, never shown to the user). Capture is on by default and
off with ``POWERCONTEXT_CAPTURE=off`` or ``capture = false`` in the repository's ``.powercontext.toml``. It fails
safe: a ``POWERCONTEXT_CAPTURE`` value that is neither an "on" nor an "off" word (``disabled``, ``none``) turns
it off too, and so does a ``.powercontext.toml`` that cannot be used (an unknown key such as ``capure``). Only
the Server redacts (``sources.redaction``): the hook sends the text as the host gave it, to the user's own Server.
The records here are ``NamedTuple``-free plain functions: a hook process imports as little as it can.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from powercontext.hosts.transport import TransportFailure, post_json

if TYPE_CHECKING:
    from collections.abc import Mapping

    from powercontext.hosts.recall import HookSettings

CAPTURE_ENV = "POWERCONTEXT_CAPTURE"
CAPTURE_WAIT_S = 0.3  # what capture may add after recall answered
MAX_SOURCE_BYTES = 64 * 1024  # the Server's limit: a larger text is not sent (a Source is never truncated)
MAX_TRANSCRIPT_TAIL = 4 * 1024 * 1024  # how much of a transcript's end is read for the last answer
# The hosts whose integration hands the agent's final answer to ``hook HOST stop`` (docs/hosts.md, "Capture").
REPLY_HOSTS = frozenset({"claude-code", "codex", "workbuddy", "opencode", "pi", "dsh", "hermes", "bub"})
_ORIGIN_TEXT = re.compile(r"^[\x21-\x7E]{1,128}$")
ON_WORDS = ("on", "1", "true", "yes")
OFF_WORDS = ("off", "0", "false", "no")


def env_capture(env: Mapping[str, str] | None = None) -> str:
    """What ``POWERCONTEXT_CAPTURE`` says: ``unset`` (absent or blank), ``on``, ``off``, or ``unrecognised``
    (any other value, which turns capture off: a misspelt opt-out must not leave it on)."""
    env = os.environ if env is None else env
    value = env.get(CAPTURE_ENV, "").strip().lower()
    if not value:
        return "unset"
    if value in ON_WORDS:
        return "on"
    return "off" if value in OFF_WORDS else "unrecognised"


def capture_on(config_capture: bool | None, env: Mapping[str, str] | None = None) -> bool:
    """Whether to capture: on unless ``POWERCONTEXT_CAPTURE`` says off (or something unrecognised) or the
    repository's ``capture = false`` does; either one turns it off."""
    return env_capture(env) in ("unset", "on") and config_capture is not False


def capture_notice(host: str, scope_id: str | None = None) -> str:
    """What ``hosts install`` tells the user about capture (on by default), and how to see what it recorded."""
    what = "your prompts and its final answers are" if host in REPLY_HOSTS else "your prompts are"
    scope = scope_id or "SCOPE"
    return (
        f"capture: {what} recorded as Sources in this Scope (secrets redacted by the Server); `remember: ...` lines"
        f" become memories. See them: powercontext source list -s {scope}; erase one: powercontext source purge ID"
        f" -s {scope}. Off: POWERCONTEXT_CAPTURE=off or `capture = false` in .powercontext.toml (docs/hosts.md)"
    )


def origin_of(host: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """The Source's origin from the hook input: the host and its session id (when it is a plain token)."""
    origin: dict[str, Any] = {"host": host}
    session = data.get("session_id")
    if isinstance(session, str) and _ORIGIN_TEXT.match(session):
        origin["session_id"] = session
    return origin


def start_prompt_capture(
    host: str, prompt: str, cwd: Path, data: Mapping[str, Any], settings: HookSettings
) -> PendingCapture | None:
    """Start sending the user's prompt as a ``prompt`` Source of the project's Scope; None when capture is off
    or the Scope cannot be resolved (recall reports that)."""
    scope_id = capture_scope(cwd)
    if scope_id is None:
        return None
    origin = origin_of(host, data)
    return PendingCapture(lambda: send_source(settings, scope_id, "prompt", prompt, origin))


def capture_scope(cwd: Path) -> str | None:
    """The Scope to capture into, or None when capture is off or no Scope can be resolved."""
    from powercontext.hosts.scope import ScopeConfigError, resolve_scope

    try:
        resolution = resolve_scope(cwd)
    except ScopeConfigError:
        return None
    config_capture = resolution.config.capture if resolution.config is not None else None
    return resolution.scope_id if capture_on(config_capture) else None


def capture_reply(host: str, data: Mapping[str, Any], cwd: Path, settings: HookSettings) -> bool:
    """The ``Stop`` hook's work: the agent's final answer (as the host hands it, else the transcript's last
    assistant message) as a ``reply`` Source. Whether it was stored."""
    scope_id = capture_scope(cwd)
    if scope_id is None:
        return False
    text = data.get("last_assistant_message")
    if not isinstance(text, str) or not text.strip():
        transcript = data.get("transcript_path")
        text = last_answer(transcript if isinstance(transcript, str) else None)
    if not text:
        return False
    return send_source(settings, scope_id, "reply", text, origin_of(host, data))


def send_source(settings: HookSettings, scope_id: str, kind: str, content: str, origin: dict[str, Any]) -> bool:
    """POST one Source within the hook's timeout; False when it was not stored (never raises)."""
    if not content.strip() or len(content.encode("utf-8")) > MAX_SOURCE_BYTES:
        return False
    body = {"kind": kind, "content": content, "origin": origin}
    path = f"/v1/scopes/{quote(scope_id, safe='')}/sources"
    try:
        answer = post_json(settings.url, path, body, token=settings.token, timeout_s=settings.timeout_s)
    except TransportFailure:
        return False
    return answer.status == 201


class PendingCapture:
    """A Source being sent on its own thread while the hook does its other work."""

    def __init__(self, send: Any) -> None:
        self.stored = False

        def run() -> None:
            try:
                self.stored = bool(send())
            except Exception:  # fail open: capture never breaks the hook
                self.stored = False

        self._thread = threading.Thread(target=run, name="powercontext-capture", daemon=True)
        self._thread.start()

    def wait(self, timeout_s: float = CAPTURE_WAIT_S) -> bool:
        """Wait at most ``timeout_s`` more; whether the Source was stored."""
        self._thread.join(max(timeout_s, 0.0))
        return self.stored


def last_answer(transcript: str | None) -> str | None:
    """The text of the last assistant message in a Claude Code JSONL transcript (read from its end only)."""
    if not transcript or "\x00" in transcript:
        return None
    path = Path(transcript)
    try:
        if not path.is_file():
            return None
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(size - MAX_TRANSCRIPT_TAIL, 0))
            lines = handle.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        text = _assistant_text(line)
        if text:
            return text
    return None


def _assistant_text(line: str) -> str | None:
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    message = entry.get("message") if isinstance(entry, dict) and entry.get("type") == "assistant" else None
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content.strip() or None
    if not isinstance(content, list):
        return None
    texts = [part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)]
    joined = "\n".join(t for t in texts if t.strip())
    return joined.strip() or None


def capture_off_line(host: str, env: Mapping[str, str] | None = None) -> str | None:
    """The stderr JSON line of a run whose capture is off because ``POWERCONTEXT_CAPTURE`` holds a value that is
    neither an on nor an off word (it names the reason, never the value); None otherwise."""
    if env_capture(env) != "unrecognised":
        return None
    line = {
        "component": f"powercontext.{host.replace('-', '_')}.capture",
        "event": "capture",
        "outcome": "off",
        "reason": "unrecognised_setting",
    }
    return json.dumps(line, separators=(",", ":"))
