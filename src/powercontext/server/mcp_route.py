"""``/mcp`` (streamable HTTP MCP) on the Server, when the optional ``mcp`` extra is installed."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from fastapi import FastAPI


def mount_mcp_if_available(app: FastAPI) -> Callable[[], AbstractAsyncContextManager[None]] | None:
    """Mount ``/mcp`` and return the lifespan hook it needs; None (no route) without the ``mcp`` package."""
    if importlib.util.find_spec("mcp") is None:
        return None
    from powercontext.mcp.http import mount_mcp

    return mount_mcp(app)
