"""What makes a JSON-RPC frame one the MCP servers answer, the same for ``powercontext mcp`` and ``/mcp``.

Standard library only: ``powercontext mcp`` imports it before its ``initialize`` answer.
"""

from __future__ import annotations

import math
from typing import Any

METHOD_NOT_FOUND, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR = -32601, -32602, -32600, -32700
INTERNAL_ERROR = -32603
# Deeper than any request this server understands; the HTTP API refuses bodies nested deeper than this too.
MAX_NESTING = 64
BATCH_REFUSED = (
    "JSON-RPC batches are not supported: MCP removed them in revision 2025-06-18, and this server answers one "
    "message at a time whatever revision it speaks; send each request on its own"
)
NOT_A_REQUEST = "not a JSON-RPC 2.0 request"
BAD_ID = "id must be a string, a number or null"


def too_deep(value: Any, limit: int = MAX_NESTING) -> bool:
    """Whether ``value`` nests arrays and objects deeper than ``limit`` (iterative: no recursion to exhaust)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return False


def valid_id(msg_id: Any) -> bool:
    """JSON-RPC 2.0: an id is a string, a number or null (never an object, an array or a boolean)."""
    if isinstance(msg_id, float):
        return math.isfinite(msg_id)  # NaN and Infinity are not JSON: an answer could not carry them
    return msg_id is None or (isinstance(msg_id, str | int) and not isinstance(msg_id, bool))


def is_response(message: Any) -> bool:
    """A frame without a method: the answer to a request of the server's (it asks none), never answered."""
    return isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message)


def frame_problem(message: Any) -> str | None:
    """Why a parsed frame is not a request or notification (answered ``-32600`` with ``id: null``, the frame's id
    never echoed); None when it is one."""
    if isinstance(message, list):
        return BATCH_REFUSED
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        return NOT_A_REQUEST
    if "id" in message and not valid_id(message["id"]):
        return BAD_ID
    return None
