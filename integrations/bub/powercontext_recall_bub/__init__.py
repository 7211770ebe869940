"""PowerContext automatic recall for Bub (``pip install <powercontext clone>/integrations/bub`` into Bub's env).

A pluggy plugin (entry-point group ``bub``). Before each model call of a turn it runs the PowerContext hook
(``python -m powercontext.hosts.hook bub``: Scope, bounded query, strict four-key validation, fail-open) once
per user prompt, within the hook budget, and puts the validated content into the request as a system
message. It acts only in a workspace where ``powercontext hosts install bub`` wrote ``.bub/powercontext.json``
(a portable file a team can commit), never elsewhere. Every path catches everything: recall never blocks a
prompt. After the model call that ends a turn (text, no tool call) it starts ``hook bub stop``, which records
that final answer as a ``reply`` Source (capture), and returns without waiting for it. This package holds no
PowerContext code: it finds the interpreter that has PowerContext at run time (``POWERCONTEXT_PYTHON``, else
the one ``hosts install`` recorded for the project on this machine, else the ``#!`` line of ``powercontext`` on
PATH).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from bub import hookimpl

HOST = "bub"
OPT_IN = Path(".bub") / "powercontext.json"
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


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


class PowerContextRecall:
    """Bub instantiates entry-point classes with its framework (whose ``workspace`` is ``-w``)."""

    def __init__(self, framework: Any = None) -> None:
        self._framework = framework
        self._last: tuple[str, str | None] | None = None  # (prompt, content): one recall per user prompt

    def _workspace(self) -> Path:
        workspace = getattr(self._framework, "workspace", None)
        return Path(workspace) if workspace else Path.cwd()

    @hookimpl
    async def before_llm_call(self, request: Any, state: Any) -> Any:
        try:
            workspace = self._workspace()
            if not (workspace / OPT_IN).is_file():
                return None
            messages = list(request.messages)
            users = [i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"]
            prompt = _text(messages[users[-1]]) if users else ""
            if not prompt.strip():
                return None
            if self._last is None or self._last[0] != prompt:
                import asyncio

                self._last = (prompt, await asyncio.to_thread(recall, prompt, workspace))
            content = self._last[1]
            if not content:
                return None
            # Beside the prompt it was prepared for, on every model call of the turn (tool rounds included).
            messages.insert(users[-1], {"role": "system", "content": content})
            return dataclasses.replace(request, messages=messages)
        except Exception:  # fail open: the request goes on unchanged
            return None

    @hookimpl
    async def after_llm_call(self, request: Any, result: Any, state: Any) -> None:
        """A call that answered with text and asked for no tool is the turn's final answer: capture it."""
        try:
            if getattr(result, "error", None) is not None or getattr(result, "tool_calls", None):
                return
            workspace = self._workspace()
            if (workspace / OPT_IN).is_file():
                session_id = state.get("session_id") if isinstance(state, dict) else None
                capture_reply(getattr(result, "text", None), workspace, session_id)
        except Exception:  # fail open: capture never touches the turn
            return
