"""Codex's per-machine hook: the hook runs after the README's install, with ``powercontext`` only in ``.venv/bin``.

Codex has no per-machine project file: it reads hooks only from the project's ``.codex/`` (committed) and from
the user's ``$CODEX_HOME`` (``hooks.json``, or ``[[hooks.UserPromptSubmit]]`` tables in ``config.toml``), and a
hook runs only if the user config trusts its hash. So when ``powercontext`` is not on ``PATH``
(``machine.machine_hook_needed``), install writes the hook into the user's ``config.toml``, inside the marked
block that already holds this project's trust, as a command that runs only inside this project::

    case "$(pwd -P)/" in /abs/project/*) exec '/abs/python' -m powercontext.hosts.hook codex ;; esac

(Codex runs hook commands with ``bash -c`` in the session's directory; elsewhere the command exits at once,
printing nothing), and trusts that hook instead of the committed one. Codex skips a hook it was not told to
trust, so on this machine exactly one of the two runs; a teammate with ``powercontext`` on ``PATH`` trusts the
committed one instead.

Codex keys a config hook's trust by its position (``<config.toml>:user_prompt_submit:<group>:0``), and every
installed project adds a group, so each write renumbers the keys in PowerContext's own blocks
(``renumbered``): uninstalling one project keeps the others trusted.
"""

from __future__ import annotations

import shlex
import tomllib
from pathlib import Path
from typing import Any

from powercontext.hosts.adapter import HOOK_TIMEOUT_S, machine_hook_command
from powercontext.hosts.files import parse_toml, toml_string
from powercontext.hosts.machine import parse_machine_command

HOST = "codex"
BLOCK_PREFIX = "# BEGIN powercontext trust "
_GUARD = 'case "$(pwd -P)/" in '


def user_hook_key(config: Path, group: int) -> str:
    """The trust key Codex gives the ``group``-th ``UserPromptSubmit`` group of the user's ``config.toml``."""
    return f"{config}:user_prompt_submit:{group}:0"


def _guard_prefix(project: Path) -> str:
    return f"{_GUARD}{shlex.quote(str(project).rstrip('/') + '/')}*) exec "


def guarded_command(project: Path, python: str | None = None) -> str:
    """The per-machine command: the hook with the interpreter that ran install, only inside ``project``."""
    return f"{_guard_prefix(project)}{machine_hook_command(HOST, python=python)} ;; esac"


def machine_handler(project: Path) -> dict[str, Any]:
    return {"type": "command", "command": guarded_command(project), "timeout": HOOK_TIMEOUT_S}


def hook_lines(handler: dict[str, Any]) -> list[str]:
    """The ``config.toml`` lines that add ``handler`` as one ``UserPromptSubmit`` group."""
    return [
        "[[hooks.UserPromptSubmit]]",
        "[[hooks.UserPromptSubmit.hooks]]",
        'type = "command"',
        f"command = {toml_string(str(handler['command']))}",
        f"timeout = {int(handler['timeout'])}",
    ]


def _groups(data: dict[str, Any]) -> list[Any]:
    hooks = data.get("hooks")
    groups = hooks.get("UserPromptSubmit") if isinstance(hooks, dict) else None
    return groups if isinstance(groups, list) else []


def _first_command(group: Any) -> str | None:
    handlers = group.get("hooks") if isinstance(group, dict) else None
    first = handlers[0] if isinstance(handlers, list) and handlers else None
    command = first.get("command") if isinstance(first, dict) else None
    return command if isinstance(command, str) else None


def machine_entry(data: dict[str, Any], project: Path) -> tuple[int, dict[str, Any], str] | None:
    """(group index, handler, interpreter) of this project's per-machine hook in the parsed user config."""
    prefix = _guard_prefix(project)
    for index, group in enumerate(_groups(data)):
        command = _first_command(group)
        if command and command.startswith(prefix) and command.endswith(" ;; esac"):
            python = parse_machine_command(command[len(prefix) : -len(" ;; esac")], HOST)
            if python is not None:
                return index, group["hooks"][0], python
    return None


def renumbered(config: Path, text: str) -> str:
    """``text`` with the trust key in each of PowerContext's blocks pointing at its hook's current position."""
    commands = [_first_command(group) for group in _groups(parse_toml(config, text))]
    state_prefix = f"[hooks.state.{toml_string(str(config))[:-1]}:user_prompt_submit:"
    out: list[str] = []
    command: str | None = None
    inside = False
    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        if stripped.startswith(BLOCK_PREFIX):
            inside, command = True, None
        elif stripped.startswith("# END powercontext "):
            inside = False
        elif inside and stripped.startswith("command = "):
            try:
                command = str(tomllib.loads(stripped)["command"])
            except (tomllib.TOMLDecodeError, KeyError):
                command = None
        elif inside and command in commands and stripped.startswith(state_prefix):
            key = user_hook_key(config, commands.index(command))
            line = f"[hooks.state.{toml_string(key)}]\n"
        out.append(line)
    return "".join(out)
