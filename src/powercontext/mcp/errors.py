"""Tool failures as an agent on MCP can act on them (standard library only).

A failing tool returns ``isError`` with one text item holding ``{"error": {"code", "message", "status"}}``:
the API's stable error code and status, and a message that names what an MCP client can do — a tool,
or the ``powercontext`` command a person runs — never an HTTP route the agent cannot call.
"""

from __future__ import annotations

import json
import re
from typing import Any

_HINTS = {
    "scope-not-found": "no Scope with this scope_id exists; the scope_list tool lists the Scopes you may read, "
    "and a person creates one with `powercontext scope create SCOPE_ID --title TITLE`",
    "scope-forbidden": "this token may not use this Scope; the scope_list tool lists the Scopes you may read",
    "unauthenticated": "the Server refused the token; set POWERCONTEXT_TOKEN for `powercontext mcp` to a token "
    "in the Server's access file",
    "server-unreachable": "no answer from the PowerContext Server; a person starts it with "
    "`powercontext server run` (POWERCONTEXT_URL says where `powercontext mcp` looks)",
}
_PROFILE_HINT = "this Scope has no committed Profile; a person commits one with `powercontext profile set`"
_ROUTE = re.compile(r"\b(?:GET|POST|PUT|PATCH|DELETE) /v1/\S*")


def mcp_message(code: str, message: str) -> str:
    """The API's message, with any HTTP route replaced by what an MCP client can do."""
    if code in _HINTS:
        return _HINTS[code]
    if code == "artifact-not-found" and "Profile" in message:
        return _PROFILE_HINT
    return _ROUTE.sub("the PowerContext CLI", message)


def error_payload(status: int, code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": mcp_message(code, message), "status": status}}


def error_text(status: int, code: str, message: str) -> str:
    return json.dumps(error_payload(status, code, message))


def api_error(status: int, body: bytes) -> str:
    """The tool error text for an HTTP API error answer (whatever its body holds)."""
    try:
        error = json.loads(body)["error"]
        return error_text(status, str(error["code"]), str(error["message"]))
    except (ValueError, KeyError, TypeError):
        return error_text(status, "http-error", f"the Server answered {status}")


def check_arguments(properties: dict[str, dict[str, Any]], required: tuple[str, ...], args: Any) -> str | None:
    """Why ``args`` cannot be sent at all (unknown or missing names, wrong JSON types); None if they can.

    Values within the right type (an enum member, a bound) are left to the API, which answers each with
    its own stable code.
    """
    if not isinstance(args, dict):
        return "arguments must be an object"
    unknown = sorted(set(args) - set(properties))
    if unknown:
        return f"unknown argument {unknown[0]!r}; this tool takes {', '.join(properties) or 'no arguments'}"
    for name in required:
        if args.get(name) is None:
            return f"argument {name!r} is required"
    for name, value in args.items():
        expected = properties[name].get("type")
        if value is None:
            continue
        if expected == "string" and not isinstance(value, str):
            return f"argument {name!r} must be a string"
        if expected == "integer" and (type(value) is not int):
            return f"argument {name!r} must be an integer"
        if expected == "array" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            return f"argument {name!r} must be a list of strings"
    return None
