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
    if code == "scope-forbidden":
        return _forbidden(message)
    if code == "artifact-not-found" and "Profile" in message:
        return _PROFILE_HINT
    return _ROUTE.sub("the PowerContext CLI", message)


def _forbidden(message: str) -> str:
    """The API's refusal names the missing grant ("ask for a 'write' grant in the access file"); it is kept, with
    who can give it and, for a Scope the token may not read, where the readable ones are listed."""
    said = message.replace("in the access file", "in the Server's access file (a person adds it)")
    if "'read' grant" in message or "grant" not in message:
        said += "; the scope_list tool lists the Scopes you may read"
    return said


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


def check_arguments(
    properties: dict[str, dict[str, Any]], required: tuple[str, ...], args: Any
) -> dict[str, Any] | str:
    """The arguments to send, checked against the tool's JSON Schema: unknown or missing names, the JSON type and
    ``enum`` membership, for every tool alike; or why they cannot be sent at all.

    An integer argument takes a number with no fractional part (``5.0`` is ``5``), as the HTTP API does. Bounds
    (``minimum``, ``maxLength``, ...) are left to the API, which answers each with its own stable code.
    """
    if not isinstance(args, dict):
        return "arguments must be an object"
    unknown = sorted(set(args) - set(properties))
    if unknown:
        return f"unknown argument {unknown[0]!r}; this tool takes {', '.join(properties) or 'no arguments'}"
    for name in required:
        if args.get(name) is None:
            return f"argument {name!r} is required"
    checked: dict[str, Any] = {}
    for name, value in args.items():
        schema = properties[name]
        if value is not None:
            value = _typed(schema.get("type"), value)
            if value is _WRONG_TYPE:
                return f"argument {name!r} must be {_TYPE_NAMES[schema['type']]}"
            allowed = schema.get("enum")
            if allowed is not None and value not in allowed:
                return f"argument {name!r} must be one of: {', '.join(allowed)}"
        checked[name] = value
    return checked


_WRONG_TYPE = object()
_TYPE_NAMES = {"string": "a string", "integer": "an integer", "array": "a list of strings"}


def _typed(expected: Any, value: Any) -> Any:
    """``value`` as the schema's type, or ``_WRONG_TYPE``."""
    if expected == "string":
        return value if isinstance(value, str) else _WRONG_TYPE
    if expected == "integer":
        if type(value) is int:
            return value
        # JSON Schema counts a number with a zero fraction as an integer; the HTTP API takes 8.0 as 8.
        return int(value) if type(value) is float and value.is_integer() else _WRONG_TYPE
    if expected == "array":
        return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else _WRONG_TYPE
    return value
