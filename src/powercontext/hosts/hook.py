"""The ``UserPromptSubmit`` hook both plugins run: ``python -m powercontext.hosts.hook claude-code|codex``.

Input: the host's hook JSON on stdin (both hosts send ``prompt`` and ``cwd``). Output on success: the
host's documented JSON form on stdout,
``{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": <content>}}``,
which both Claude Code and Codex add to the model's context next to the unchanged prompt. Otherwise
nothing on stdout. The exit status is always 0: the hook never blocks or rewrites the prompt.
Failures write one JSON line to stderr (CONTRACTS §2.8) that names no query, content, Scope or body.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import IO, Any

from powercontext.hosts import HOSTS
from powercontext.hosts.recall import HookSettings, RecallOutcome, recall_for_prompt

MAX_HOOK_INPUT_BYTES = 4 * 1024 * 1024


def host_output(host: str, content: str) -> str:
    """The stdout text that makes ``host`` add ``content`` to the model's context."""
    if host not in HOSTS:
        raise ValueError(f"unknown host {host!r}")
    # Both hosts document the same UserPromptSubmit JSON form for additional context.
    payload = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": content}}
    return json.dumps(payload, ensure_ascii=False)


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


def _read_input(stdin: IO[bytes]) -> dict[str, Any] | None:
    raw = stdin.read(MAX_HOOK_INPUT_BYTES + 1)
    if len(raw) > MAX_HOOK_INPUT_BYTES:
        return None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def run_hook(host: str, stdin: IO[bytes], stdout: IO[str], stderr: IO[str], settings: HookSettings) -> RecallOutcome:
    """One hook invocation; returns what happened (the caller always exits 0)."""
    started = time.monotonic()
    data = _read_input(stdin)
    prompt = data.get("prompt") if data else None
    cwd_raw = data.get("cwd") if data else None
    request = None
    if not isinstance(prompt, str) or not prompt.strip():
        outcome = RecallOutcome("skipped", "no_prompt")
    else:
        cwd = Path(cwd_raw) if isinstance(cwd_raw, str) and cwd_raw else Path.cwd()
        outcome, request = recall_for_prompt(prompt, cwd, settings)
    if outcome.injected and outcome.content is not None:
        stdout.write(host_output(host, outcome.content))
        stdout.flush()
    else:
        stderr.write(diagnostic_line(host, outcome) + "\n")
        stderr.flush()
    elapsed_ms = round((time.monotonic() - started) * 1000, 1)
    try:
        from powercontext.hosts.diagnostics import record_diagnostics, write_state

        write_state(
            settings,
            {
                "time": round(time.time(), 3),
                "host": host,
                "outcome": outcome.outcome,
                "reason": outcome.reason,
                "http_status": outcome.http_status,
                "content_bytes": outcome.content_bytes,
                "duration_ms": elapsed_ms,
            },
        )
        if settings.diagnostics and request is not None and request.query:
            record_diagnostics(request, settings, host, settings.timeout_s)
    except OSError:
        pass  # the state file is a convenience for `hosts doctor`; never fail the hook over it
    return outcome


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    host = args[0] if args else "claude-code"
    try:
        if host not in HOSTS:
            sys.stderr.write(json.dumps({"component": "powercontext.hook", "outcome": "skipped", "reason": "bad_host"}))
            sys.stderr.write("\n")
            return 0
        # The context is UTF-8 whatever the locale says; hosts read the hook's stdout as UTF-8 JSON.
        if hasattr(sys.stdout, "reconfigure"):
            sys.stdout.reconfigure(encoding="utf-8")
        run_hook(host, sys.stdin.buffer, sys.stdout, sys.stderr, HookSettings.from_env())
    except BaseException as exc:  # fail open whatever happens, including an interrupt
        line = {"component": "powercontext.hook", "outcome": "skipped", "reason": "internal_error"}
        line["error_type"] = type(exc).__name__
        sys.stderr.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
