"""PowerContext automatic recall for Hermes Agent, written by `powercontext hosts install hermes`.

A Hermes user plugin (``$HERMES_HOME/plugins/powercontext/``, enabled in ``config.yaml`` ``plugins.enabled``).
On ``pre_llm_call`` (once per user turn) it runs the PowerContext hook (``python -m powercontext.hosts.hook
hermes``: Scope, bounded query, strict four-key validation, fail-open) within the hook budget and returns the
validated content as ``{"context": ...}``, which Hermes appends to that turn's user message (not persisted).
On ``post_llm_call`` (once per turn, after the tool loop, with the final answer) it starts ``hook hermes stop``,
which records that answer as a ``reply`` Source (capture), and returns without waiting for it.
It acts only in a project where install wrote ``.hermes/powercontext.json``. Every path catches everything:
a plugin error never blocks a prompt. It holds no machine-specific path: the interpreter that has
PowerContext is found at run time (``POWERCONTEXT_PYTHON``, else the one install recorded for the project on
this machine, else the ``#!`` line of ``powercontext`` on PATH).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

HOST = "hermes"
OPT_IN = Path(".hermes") / "powercontext.json"


# -- BEGIN recall runner (the same text in every Python plugin: Bub's package, Hermes's plugin) --
MAX_OUTPUT_BYTES = 1024 * 1024
START_ALLOWANCE_S = 0.4  # starting the hook's interpreter on a busy machine


def _budget_s() -> float:
    try:
        value = int(os.environ.get("POWERCONTEXT_HOOK_TIMEOUT_MS", "") or 1500)
    except ValueError:
        value = 1500
    return min(max(value, 50), 60000) / 1000


def _recorded_python(cwd: Path) -> str | None:
    base = os.environ.get("XDG_CONFIG_HOME", "").strip() or str(Path.home() / ".config")
    try:
        projects = json.loads((Path(base) / "powercontext" / "hosts.json").read_text(encoding="utf-8"))["projects"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    for directory in (cwd, *cwd.parents):
        entry = projects.get(str(directory)) if isinstance(projects, dict) else None
        python = entry.get("python") if isinstance(entry, dict) else None
        if isinstance(python, str) and Path(python).is_file():
            return python
    return None


def _interpreter(cwd: Path) -> str | None:
    explicit = os.environ.get("POWERCONTEXT_PYTHON", "").strip()
    if explicit:
        return explicit
    recorded = _recorded_python(cwd)
    if recorded:
        return recorded
    script = shutil.which("powercontext")
    if script is None:
        return None
    with open(script, encoding="utf-8", errors="replace") as handle:
        first = handle.readline(4096)
    interpreter = first[2:].strip() if first.startswith("#!") else ""
    return interpreter if interpreter and not any(c.isspace() for c in interpreter) else None


def recall(prompt: str, cwd: Path) -> str | None:
    """The validated context for ``prompt``, or None (no context, timeout, no interpreter, any error)."""
    try:
        python = _interpreter(cwd)
        if python is None:
            return None
        payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": str(cwd)})
        done = subprocess.run(
            [python, "-m", "powercontext.hosts.hook", HOST],
            input=payload.encode("utf-8"),
            capture_output=True,
            cwd=cwd,
            timeout=_budget_s() + START_ALLOWANCE_S,
        )
        if len(done.stdout) > MAX_OUTPUT_BYTES or not done.stdout.strip():
            return None
        content = json.loads(done.stdout).get("hookSpecificOutput", {}).get("additionalContext")
        return content if isinstance(content, str) and content else None
    except Exception:  # fail open whatever happens
        return None


# The hook's input for the agent's final answer must fit an empty pipe (64 KiB on Linux), so that handing it
# over never blocks the host; a larger answer exceeds the Server's Source limit anyway and is not captured.
MAX_REPLY_INPUT_BYTES = 64 * 1024


def capture_reply(answer: Any, cwd: Path, session_id: Any = None) -> None:
    """Start the hook's capture of the agent's final answer (``hook HOST stop``: a ``reply`` Source) and return
    at once: the hook runs on in its own session, its request bounded by the hook budget; never raises."""
    try:
        if not isinstance(answer, str) or not answer.strip():
            return
        python = _interpreter(cwd)
        if python is None:
            return
        data: dict[str, Any] = {"hook_event_name": "Stop", "cwd": str(cwd), "last_assistant_message": answer}
        if isinstance(session_id, str) and session_id:
            data["session_id"] = session_id
        payload = json.dumps(data).encode("utf-8")
        if len(payload) > MAX_REPLY_INPUT_BYTES:
            return
        child = subprocess.Popen(
            [python, "-m", "powercontext.hosts.hook", HOST, "stop"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            start_new_session=True,
        )
        if child.stdin is not None:
            with child.stdin:
                child.stdin.write(payload)
    except Exception:  # fail open whatever happens
        return


# -- END recall runner --


def _pre_llm_call(**kwargs: Any) -> dict[str, str] | None:
    try:
        prompt = kwargs.get("user_message")
        cwd = Path.cwd()
        project = next((d for d in (cwd, *cwd.parents) if (d / OPT_IN).is_file()), None)
        if project is None or not isinstance(prompt, str) or not prompt.strip():
            return None
        content = recall(prompt, cwd)
        return {"context": content} if content else None
    except Exception:  # fail open: the turn goes on unchanged
        return None


def _post_llm_call(**kwargs: Any) -> None:
    try:
        cwd = Path.cwd()
        if any((d / OPT_IN).is_file() for d in (cwd, *cwd.parents)):
            capture_reply(kwargs.get("assistant_response"), cwd, kwargs.get("session_id"))
    except Exception:  # fail open: capture never touches the turn
        return


def register(ctx: Any) -> None:
    ctx.register_hook("pre_llm_call", _pre_llm_call)
    ctx.register_hook("post_llm_call", _post_llm_call)
