"""Server messages, told in CLI terms: where a message names an HTTP route, the command that does it.

The Server's messages are written for every client, so they name routes (``create it with POST
/v1/scopes``). A person at a shell wants the command to type, with the Scope they just used filled in.
"""

from __future__ import annotations

import re

from powercontext.code.errors import NEVER_INDEXED

# The client has already told the routes as its methods (``client.errors.with_methods``); both forms are matched.
_ROUTE_COMMANDS = (
    (re.compile(r"POST /v1/scopes\b(?!/)|client\.create_scope\([^)]*\)"), "`powercontext scope create {scope}`"),
    (
        re.compile(r"PUT /v1/scopes/\{scope_id\}/profile|client\.set_profile\([^)]*\)"),
        "`powercontext profile set KEY=VALUE -s {scope}`",
    ),
)
_CODE_HINTS = {
    "code-root-forbidden": "start the Server with POWERCONTEXT_CODE_ROOTS=<a directory above it> (`:`-separated), "
    "or index in this process with `powercontext code index PATH -s {scope} --db <store file>`",
    "server-unreachable": "start one with `powercontext server run`, or point --url / POWERCONTEXT_URL at it",
}


def with_commands(code: str, message: str, scope: str | None, nearest_scope: str | None = None) -> str:
    """``message`` with every route it names replaced by the CLI command (and a hint for some codes);
    ``scope`` is the command's ``--scope``, when it has one. ``nearest_scope``, an existing Scope close to a
    missing one, is offered instead of creating what is most likely a typo."""
    if code == "scope-not-found" and nearest_scope:
        return f"no Scope {scope} exists; did you mean {nearest_scope}? (`powercontext scope list` lists them)"
    scope = scope or "SCOPE"
    for pattern, command in _ROUTE_COMMANDS:
        message = pattern.sub(command.format(scope=scope), message)
    hint = _CODE_HINTS.get(code)
    if code == "code-root-forbidden" and message.startswith(NEVER_INDEXED):
        hint = None  # neither a root nor --db indexes /proc, /sys or /dev (code.confine)
    if hint is not None:
        hint = hint.format(scope=scope)
        # After a question ("is it running?") the hint is a sentence of its own, not a clause after "; ".
        message = f"{message} {hint[0].upper()}{hint[1:]}" if message.endswith("?") else f"{message}; {hint}"
    return message
