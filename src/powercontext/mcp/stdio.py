"""``powercontext mcp``: the tools over stdio, calling a Server over HTTP."""

from __future__ import annotations

import anyio

from powercontext.mcp.bridge import HttpBridge
from powercontext.mcp.tools import build_server


def serve_stdio(url: str, token: str | None) -> None:
    """Serve until stdin closes. Every tool call uses ``token`` (``POWERCONTEXT_TOKEN``) against ``url``."""
    bridge = HttpBridge(url, f"Bearer {token}" if token else None)
    server = build_server(lambda ctx: bridge)
    anyio.run(server.run_stdio_async)
