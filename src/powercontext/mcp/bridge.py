"""How ``/mcp`` on the Server reaches the HTTP API: in-process through the Server's own ASGI app."""

from __future__ import annotations

from typing import Any

import httpx

# In-process calls (``/mcp`` on the Server) carry a loopback Host, which the Server's Host rules accept.
INTERNAL_BASE_URL = "http://127.0.0.1"


class HttpBridge:
    """Calls the API with the caller's ``Authorization``; ``transport`` is an ``httpx.ASGITransport``."""

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

    async def call(self, method: str, path: str, body: Any = None) -> tuple[int, bytes] | None:
        """(status, body), or None when there was no answer."""
        try:
            async with httpx.AsyncClient(
                base_url=self._base_url, headers=self._headers, transport=self._transport, timeout=self._timeout
            ) as http:
                response = await http.request(method, path, json=body)
        except httpx.TransportError:
            return None
        return response.status_code, response.content
