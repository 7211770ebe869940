"""The ``powercontext`` console script: ``powercontext mcp`` starts without loading the CLI framework.

Agent hosts start ``powercontext mcp`` at every session and wait for its ``initialize`` answer, so that
command alone skips Typer, Rich and the other commands' imports. Everything else goes to the full CLI.
"""

from __future__ import annotations

import os
import sys

DEFAULT_URL = "http://127.0.0.1:8765"


def mcp_arguments(args: list[str]) -> str | None:
    """The Server URL when ``args`` are exactly ``mcp [--url URL]``; None for anything else (e.g. ``--help``)."""
    if not args or args[0] != "mcp":
        return None
    rest = args[1:]
    if not rest:
        return os.environ.get("POWERCONTEXT_URL") or DEFAULT_URL
    if len(rest) == 2 and rest[0] == "--url" and rest[1]:
        return rest[1]
    if len(rest) == 1 and rest[0].startswith("--url=") and len(rest[0]) > len("--url="):
        return rest[0].removeprefix("--url=")
    return None


def main() -> None:
    url = mcp_arguments(sys.argv[1:])
    if url is not None:
        from powercontext.mcp.stdio import serve_stdio

        serve_stdio(url, os.environ.get("POWERCONTEXT_TOKEN") or None)
        return
    from powercontext.cli.main import main as full_cli

    full_cli()
