"""One ``tools/call``, transport-free: arguments to an API call, the API's answer to a tool result.

Both MCP servers use it, so a tool behaves identically over stdio and at ``/mcp``. Standard library only.
"""

from __future__ import annotations

import json
from typing import Any

from powercontext.mcp.catalog import TOOLS_BY_NAME, Call
from powercontext.mcp.errors import api_error, check_arguments, error_text


def error_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def plan_call(params: Any) -> Call | dict[str, Any]:
    """The (method, path, body) for a ``tools/call``'s params, or the error result when it cannot be sent."""
    name = params.get("name") if isinstance(params, dict) else None
    tool = TOOLS_BY_NAME.get(name) if isinstance(name, str) else None
    if tool is None:
        return error_result(error_text(404, "unknown-tool", f"no tool named {name!r}; tools/list names them"))
    args = params.get("arguments") or {}
    checked = check_arguments(tool.properties, tool.required, args)
    if isinstance(checked, str):
        return error_result(error_text(422, "invalid-request", checked))
    return tool.call(checked)


def result_from_answer(answer: tuple[int, bytes] | None) -> dict[str, Any]:
    """The tool result for the API's (status, body); None means the Server did not answer in time."""
    if answer is None:
        return error_result(error_text(0, "server-unreachable", "no answer"))
    status, raw = answer
    if status >= 400:
        return error_result(api_error(status, raw))
    try:
        result = json.loads(raw)
    except ValueError:
        return error_result(error_text(status, "http-error", "the Server's answer is not JSON"))
    structured = result if isinstance(result, dict) else {"result": result}
    return {"content": [{"type": "text", "text": json.dumps(structured)}], "structuredContent": structured}
