"""Output for people: everything the CLI prints for a terminal goes through ``terminal_safe`` first.

Stored text (memory bodies, titles, suites' categories, code lines, a server's error message) is hostile: a body
of ``\\x1b[2J`` would clear the screen, an OSC sequence would retitle the window or write a link, a bidi override
would make a line read differently from what it says. ``say`` and ``rich_terminal.TerminalConsole`` show every
such character as an escape instead; ``--json`` output is written elsewhere (``cli.common.printed_as_json``) and
stays exact.
"""

from __future__ import annotations

import sys

from powercontext.text.urls import mask_credentials
from powercontext.text.visible import terminal_text


def terminal_safe(text: str) -> str:
    """``text`` with every control (C0 but newline and tab, DEL, C1), line separator, bidi, tag and other
    invisible character written as a visible escape (``\\x1b``, ``\\u202e``, ``\\U000e0041``), and the
    credentials of every URL in it masked (``http://***@host``)."""
    return mask_credentials(terminal_text(text))


def say(message: str = "", *, err: bool = False, nl: bool = True) -> None:
    """Print ``message`` for a person (stdout, or stderr with ``err``), terminal-safe. Typer is not loaded for
    this: the short route (``cli.quick``) prints with it too."""
    stream = sys.stderr if err else sys.stdout
    stream.write(terminal_safe(message) + ("\n" if nl else ""))
    stream.flush()


def confirm_irreversible(what: str, yes: bool) -> None:
    """Go on only with ``--yes``, or when a person at a terminal confirms; a script without ``--yes`` is refused
    (exit 2) before anything is sent."""
    import typer

    if yes:
        return
    if not sys.stdin.isatty():
        say(f"error: refusing to {what} without --yes (not an interactive terminal)", err=True)
        raise typer.Exit(2)
    if not typer.confirm(f"{what[0].upper()}{what[1:]}. Go on?", default=False):
        raise typer.Exit(1)
