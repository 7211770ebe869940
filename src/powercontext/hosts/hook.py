"""The ``UserPromptSubmit`` hook: ``powercontext hook claude-code|codex`` (or ``python -m powercontext.hosts.hook``),
and the ``Stop`` hook: ``powercontext hook <host> stop`` (capture of the final answer, ``hosts.capture``).

The prompt is also captured as a Source, beside the recall request (``hosts.capture``; off with
``POWERCONTEXT_CAPTURE=off``).

Input: the host's hook JSON on stdin (both hosts send ``prompt``, ``cwd`` and ``session_id``). Output on
success: the host's documented JSON form on stdout,
``{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": <content>}}``,
which both Claude Code and Codex add to the model's context next to the unchanged prompt. When recall is
down (Server unreachable or refusing), the first prompt of a session gets ``{"systemMessage": <one line>}``
instead, which the host shows the user and keeps out of the model's context (``notice``). Otherwise nothing
on stdout. The exit status is always 0: the hook never blocks or rewrites the prompt, and never raises.
Every run that injects nothing writes one JSON line to stderr (CONTRACTS §2.8), always of the same shape,
that names no query, content, Scope or body.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

from powercontext.fd_read import read_at_most
from powercontext.hosts import HOSTS
from powercontext.hosts.capture import capture_off_line, capture_reply, start_prompt_capture
from powercontext.hosts.recall import HookSettings, RecallOutcome, recall_for_prompt

MAX_HOOK_INPUT_BYTES = 4 * 1024 * 1024
USAGE = """Usage: powercontext hook HOST [stop]

The agent host's hook, registered by `powercontext hosts install HOST` (docs/hosts.md); not meant to be typed.
It reads the host's hook JSON on stdin. `powercontext hook HOST` recalls context for the prompt and prints it in
the host's JSON form; `powercontext hook HOST stop` captures the agent's final answer. It always exits 0: when
recall fails it prints one content-free JSON line on stderr instead. `powercontext hosts doctor` checks it.

HOST: {hosts}
"""
QUIET_ENV = "POWERCONTEXT_HOOK_QUIET"


def host_output(host: str, content: str) -> str:
    """The stdout text that makes ``host`` add ``content`` to the model's context."""
    if host not in HOSTS:
        raise ValueError(f"unknown host {host!r}")
    # Both hosts document the same UserPromptSubmit JSON form for additional context.
    payload = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": content}}
    return json.dumps(payload, ensure_ascii=False)


def notice_output(message: str) -> str:
    """The stdout text that makes the host show ``message`` to the user only."""
    return json.dumps({"systemMessage": message})


def diagnostic_line(host: str, outcome: RecallOutcome) -> str:
    line: dict[str, Any] = {
        "component": f"powercontext.{host.replace('-', '_')}.recall",
        "event": "context_prepare",
        "outcome": outcome.outcome,
        "reason": outcome.reason,
        "http_status": outcome.http_status,
        "context_status": outcome.context_status,
        "content_bytes": outcome.content_bytes,
    }
    if outcome.error_code:
        line["error_code"] = outcome.error_code
    return json.dumps(line, separators=(",", ":"))


def _parse_input(raw: bytes | None) -> dict[str, Any] | None:
    """The hook input as a JSON object; None when it is not one (or holds a string that is not text, such as a
    lone surrogate escape), or when there is no input (``raw`` None: stdin was not closed in time)."""
    if raw is None or len(raw) > MAX_HOOK_INPUT_BYTES:
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
        # "\ud800" is valid JSON but no text: refused here, not as an internal error when it is sent.
        for value in data.values() if isinstance(data, dict) else ():
            if isinstance(value, str):
                value.encode("utf-8")
    except (UnicodeError, ValueError, RecursionError):  # RecursionError: JSON nested beyond the stack
        return None
    return data if isinstance(data, dict) else None


def _read_stdin(stdin: IO[bytes], timeout_s: float) -> bytes | None:
    """At most ``MAX_HOOK_INPUT_BYTES + 1`` bytes of stdin up to its end, or None when the host keeps it open
    past ``timeout_s``: the read runs on a daemon thread the hook abandons, straight from the file descriptor
    (a thread blocked inside ``sys.stdin.buffer`` would hold its lock and abort the interpreter at exit)."""
    try:
        fd = stdin.fileno()
    except (AttributeError, OSError, ValueError):  # an in-memory stream
        return stdin.read(MAX_HOOK_INPUT_BYTES + 1)
    done: list[bytes] = []
    reader = threading.Thread(
        target=lambda: done.append(read_at_most(fd, MAX_HOOK_INPUT_BYTES)), name="powercontext-stdin", daemon=True
    )
    reader.start()
    reader.join(timeout_s)
    return done[0] if done else None  # an OSError ends the thread without a result: treated as a timeout


def settings_for(settings: HookSettings, cwd: Path) -> HookSettings:
    """Fill URL/token the environment left unset from what ``hosts install`` recorded for this project."""
    if os.environ.get("POWERCONTEXT_URL", "").strip() and os.environ.get("POWERCONTEXT_TOKEN", "").strip():
        return settings
    from powercontext.hosts.machine import project_settings
    from powercontext.hosts.scope import find_repo_root

    recorded = project_settings(find_repo_root(cwd) or cwd)
    if not os.environ.get("POWERCONTEXT_URL", "").strip() and "url" in recorded:
        settings = settings._replace(url=recorded["url"])
    if not os.environ.get("POWERCONTEXT_TOKEN", "").strip() and "token" in recorded:
        settings = settings._replace(token=recorded["token"])
    return settings


def _notice(host: str, outcome: RecallOutcome, data: dict[str, Any] | None, settings: HookSettings) -> str | None:
    if outcome.outcome not in {"server_unavailable", "refused", "version_mismatch"} or data is None:
        return None
    if os.environ.get(QUIET_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return None
    from powercontext.hosts.notice import claim_notice, notice_text

    if not claim_notice(settings.resolved_state_dir(), host, data.get("session_id")):
        return None
    return notice_output(notice_text(outcome.outcome, outcome.reason, outcome.error_code))


def _record(host: str, outcome: RecallOutcome, settings: HookSettings, elapsed_ms: float, request: Any) -> None:
    from powercontext.hosts.diagnostics import record_diagnostics, write_state

    record = {
        "time": round(time.time(), 3),
        "host": host,
        "outcome": outcome.outcome,
        "reason": outcome.reason,
        "http_status": outcome.http_status,
        "content_bytes": outcome.content_bytes,
        "duration_ms": elapsed_ms,
        # Which Scope's prompt it was: the state is per user, and doctor reports it only in that Scope's projects.
        "scope_id": getattr(request, "scope_id", None),
    }
    write_state(settings, record)
    if settings.diagnostics and request is not None and request.query:
        record_diagnostics(request, settings, host, settings.timeout_s)


def _cwd_of(raw: Any) -> Path:
    return Path(raw) if isinstance(raw, str) and raw and "\x00" not in raw else Path.cwd()


def defers_to_machine_entry(host: str, event: str | None, cwd: Path) -> bool:
    """Whether this (committed, ``powercontext hook HOST``) run stands down because the project also registers
    this machine's own entry for the event, which the host runs too (``hosts.local_hooks``)."""
    from powercontext.hosts.machine import machine_hook_python, machine_hooks_file
    from powercontext.hosts.scope import find_repo_root

    if machine_hooks_file(host) is None:
        return False
    return machine_hook_python(find_repo_root(cwd) or cwd, host, event) is not None


def run_stop_hook(host: str, stdin: IO[bytes], settings: HookSettings, portable: bool = False) -> bool:
    """The ``Stop`` hook (``powercontext hook <host> stop``): capture the agent's final answer as a ``reply``
    Source. Writes nothing on stdout (a Stop hook's output could keep the agent going); whether it was stored."""
    data = _parse_input(_read_stdin(stdin, settings.timeout_s))
    if data is None:
        return False
    cwd = _cwd_of(data.get("cwd"))
    if portable and defers_to_machine_entry(host, "stop", cwd):
        return False
    return capture_reply(host, data, cwd, settings_for(settings, cwd))


def run_hook(
    host: str, stdin: IO[bytes], stdout: IO[str], stderr: IO[str], settings: HookSettings, portable: bool = False
) -> RecallOutcome:
    """One hook invocation; returns what happened (the caller always exits 0). ``portable``: run by the committed
    ``powercontext hook HOST`` entry, which stands down when this machine's own entry is registered too."""
    started = time.monotonic()
    raw = _read_stdin(stdin, settings.timeout_s)  # bounded: a host that keeps stdin open must not hold the hook
    data = _parse_input(raw)
    prompt = data.get("prompt") if data else None
    cwd_raw = data.get("cwd") if data else None
    request = None
    if raw is None:
        outcome = RecallOutcome("skipped", "input_timeout")
    elif data is None:
        outcome = RecallOutcome("skipped", "bad_input")
    elif not isinstance(prompt, str) or not prompt.strip():
        outcome = RecallOutcome("skipped", "no_prompt")
    elif portable and defers_to_machine_entry(host, None, _cwd_of(cwd_raw)):
        # Not recorded either: the state file is the run that did the work.
        stderr.write(diagnostic_line(host, RecallOutcome("skipped", "machine_entry")) + "\n")
        stderr.flush()
        return RecallOutcome("skipped", "machine_entry")
    else:
        cwd = _cwd_of(cwd_raw)
        settings = settings_for(settings, cwd)
        capture = start_prompt_capture(host, prompt, cwd, data, settings)  # beside recall, not after it
        outcome, request = recall_for_prompt(prompt, cwd, settings)
        if capture is not None:
            capture.wait()
        elif (off := capture_off_line(host)) is not None:  # say why a misspelt opt-out captured nothing
            stderr.write(off + "\n")
    if outcome.injected and outcome.content is not None:
        stdout.write(host_output(host, outcome.content))
        stdout.flush()
    else:
        stderr.write(diagnostic_line(host, outcome) + "\n")
        stderr.flush()
        notice = _notice(host, outcome, data, settings)
        if notice is not None:
            stdout.write(notice)
            stdout.flush()
    # The state file is a convenience for `hosts doctor`; never fail the hook over it.
    with contextlib.suppress(OSError, ValueError):
        _record(host, outcome, settings, round((time.monotonic() - started) * 1000, 1), request)
    return outcome


def _write_quietly(stream: IO[str], text: str) -> None:
    # A closed pipe must not turn fail-open into a crash.
    with contextlib.suppress(BaseException):
        stream.write(text)
        stream.flush()


def main(argv: list[str] | None = None, portable: bool = False) -> int:
    """``python -m powercontext.hosts.hook HOST [stop]`` (this machine's entry, a plugin), or, ``portable``, the
    committed ``powercontext hook HOST [stop]``. Always 0."""
    args = sys.argv[1:] if argv is None else argv
    if "--help" in args or "-h" in args:  # a person reading about the command; no host ever passes these
        _write_quietly(sys.stdout, USAGE.format(hosts=", ".join(HOSTS)))
        return 0
    host = args[0] if args else "claude-code"
    if host not in HOSTS:
        _write_quietly(sys.stderr, diagnostic_line("hook", RecallOutcome("skipped", "bad_host")) + "\n")
        return 0
    try:
        # The context is UTF-8 whatever the locale says; hosts read the hook's stdout as UTF-8 JSON.
        if hasattr(sys.stdout, "reconfigure"):
            sys.stdout.reconfigure(encoding="utf-8")
        if args[1:2] == ["stop"]:
            if (off := capture_off_line(host)) is not None:
                _write_quietly(sys.stderr, off + "\n")
            run_stop_hook(host, sys.stdin.buffer, HookSettings.from_env(), portable)
            return 0
        run_hook(host, sys.stdin.buffer, sys.stdout, sys.stderr, HookSettings.from_env(), portable)
    except BaseException:  # fail open whatever happens, including an interrupt; same line shape as every path
        _write_quietly(sys.stderr, diagnostic_line(host, RecallOutcome("skipped", "internal_error")) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
