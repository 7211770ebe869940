"""How the CLI tells a failed request: one line, ``error: <code>: <message>``, and an exit code by its class.

Typer-free, so the short route (``cli.quick``) tells an error in the same words as the full CLI.
"""

from __future__ import annotations

from powercontext.cli.hints import with_commands
from powercontext.errors import Conflict, InvalidRequest, NotFound, PowerContextError, Unavailable

# Exit codes by class of failure (documented in docs/cli.md): scripts can branch without parsing text.
EXIT_REFUSED, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_CONFLICT, EXIT_UNREACHABLE = 1, 2, 3, 4, 5


def exit_code_for(error: PowerContextError) -> int:
    """3 not found, 4 conflict, 5 Server unreachable (or unavailable), 2 an invalid request, else 1."""
    for family, code in (
        (NotFound, EXIT_NOT_FOUND),
        (Conflict, EXIT_CONFLICT),
        (Unavailable, EXIT_UNREACHABLE),
        (InvalidRequest, EXIT_USAGE),
    ):
        if isinstance(error, family):
            return code
    return EXIT_REFUSED


def told(error: PowerContextError, scope: str | None, nearest_scope: str | None = None) -> str:
    """``<code>: <message>``, the message in CLI terms (``hints.with_commands``)."""
    return f"{error.code}: {with_commands(error.code, error.message, scope, nearest_scope)}"
