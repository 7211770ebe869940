"""The ``powercontext`` console script: ``powercontext hook HOST`` and ``powercontext mcp`` start without the CLI.

Agent hosts run the hook before every prompt and start ``powercontext mcp`` at every session, waiting for its
``initialize`` answer, so those two commands skip Typer, Rich and the other commands' imports. Everything else
goes to the full CLI, but for ``memory add``, ``memory search`` and ``context prepare`` in their common shape,
which take a short route of their own (``cli.quick``).
"""

from __future__ import annotations

import os
import sys

from powercontext.server_url import DEFAULT_URL


def mcp_arguments(args: list[str]) -> str | None:
    """``""`` when ``args`` are exactly ``mcp`` (the URL is resolved later), the URL of ``mcp --url URL``, and
    None for anything else (e.g. ``mcp --help``, which the full CLI answers)."""
    if not args or args[0] != "mcp":
        return None
    rest = args[1:]
    if not rest:
        return ""
    if len(rest) == 2 and rest[0] == "--url" and rest[1]:
        return rest[1]
    if len(rest) == 1 and rest[0].startswith("--url=") and len(rest[0]) > len("--url="):
        return rest[0].removeprefix("--url=")
    return None


def _serve_mcp(url: str) -> None:
    """Without ``--url``/``POWERCONTEXT_URL`` (and ``POWERCONTEXT_TOKEN``), what ``hosts install`` recorded for
    the project in the current directory is used, as the hook does."""
    from pathlib import Path

    from powercontext.hosts.hook import settings_for
    from powercontext.hosts.recall import HookSettings
    from powercontext.mcp.stdio import serve_stdio

    settings = settings_for(HookSettings.from_env(), Path.cwd())
    serve_stdio(url or settings.url or DEFAULT_URL, settings.token)


def main() -> None:
    args = sys.argv[1:]
    if args and args[0] == "hook":
        from powercontext.hosts.hook import main as hook_main

        raise SystemExit(hook_main(args[1:], portable=True))
    url = mcp_arguments(args)
    if url is not None:
        _serve_mcp(url or os.environ.get("POWERCONTEXT_URL", "").strip())
        return
    from powercontext.cli.quick import answer

    try:
        code = answer(args)
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    if code is not None:
        raise SystemExit(code)
    _skip_unused_imports(args)
    from powercontext.cli.main import main as full_cli

    full_cli()


# Command groups that only talk HTTP to a Server (or read local files): nothing in them is a pydantic plugin's
# business. ``server``, ``eval`` and ``store`` keep the plugins a user installed.
_CLIENT_GROUPS = frozenset({"scope", "memory", "source", "context", "topic", "experience", "profile", "code", "prompt"})


def _skip_unused_imports(args: list[str]) -> None:
    """What a client command would import and never use, left out (issue 41: a command in <= 250 ms).

    httpx imports its own command line (Click, Rich, Pygments: ~30 ms) whenever those are installed; a
    ``None`` in ``sys.modules`` makes that optional import fail, and httpx falls back to a stub ``main``.
    pydantic scans every installed distribution's entry points for plugins at the first model (~15 ms);
    ``PYDANTIC_DISABLE_PLUGINS`` (its documented switch) skips that for client commands, unless set."""
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    if args and args[0] in _CLIENT_GROUPS:
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
