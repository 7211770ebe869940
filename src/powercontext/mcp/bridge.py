"""How MCP tools reach the HTTP API: over the network (stdio server) or in-process (``/mcp`` on the Server)."""

from __future__ import annotations

import json
from typing import Any, Protocol
from urllib.parse import quote

import httpx
from mcp.server.mcpserver.exceptions import ToolError

# In-process calls (``/mcp`` on the Server) carry a loopback Host, which the Server's Host rules accept.
INTERNAL_BASE_URL = "http://127.0.0.1"


class ApiBridge(Protocol):
    async def call(
        self, method: str, path: str, body: Any = None, params: dict[str, str | int] | None = None
    ) -> Any: ...


def segment(value: str) -> str:
    """One path segment, percent-encoded like the Python client does."""
    return quote(value, safe=":@+=~.-_")


def tool_error(status: int, code: str, message: str) -> ToolError:
    """A tool failure carrying the HTTP API's stable error code as JSON the agent can read."""
    return ToolError(json.dumps({"error": {"code": code, "message": message, "status": status}}))


class HttpBridge:
    """Calls the API with one bearer token; ``transport`` may be an ``httpx.ASGITransport`` (in-process)."""

    def __init__(
        self,
        base_url: str,
        authorization: str | None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = 30.0,
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._headers = {"Authorization": authorization} if authorization else {}
        if transport is not None:
            # In-process calls are traced as children of the /mcp request, not counted as traffic.
            self._headers["X-PowerContext-Internal"] = "mcp"
        self._transport = transport
        self._timeout = timeout

    async def call(self, method: str, path: str, body: Any = None, params: dict[str, str | int] | None = None) -> Any:
        try:
            async with httpx.AsyncClient(
                base_url=self._base_url, headers=self._headers, transport=self._transport, timeout=self._timeout
            ) as http:
                response = await http.request(method, path, json=body, params=params)
        except httpx.TransportError as exc:
            raise tool_error(0, "server-unreachable", f"no answer from the Server ({type(exc).__name__})") from None
        if response.status_code >= 400:
            try:
                error = response.json()["error"]
                raise tool_error(response.status_code, str(error["code"]), str(error["message"]))
            except (ValueError, KeyError, TypeError):
                raise tool_error(response.status_code, "http-error", f"HTTP {response.status_code}") from None
        return response.json()
