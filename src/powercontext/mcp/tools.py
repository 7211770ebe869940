"""The ``mcp`` SDK server behind ``/mcp``: the tools of ``catalog``, and nothing else advertised.

The SDK's low-level ``Server`` is used so that each tool's JSON Schema, title and annotations are
exactly the catalog's (the same ones ``powercontext mcp`` lists), and only the ``tools`` capability
is advertised (no empty ``resources`` or ``prompts``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from powercontext import __version__
from powercontext.mcp.bridge import HttpBridge
from powercontext.mcp.catalog import TOOL_NAMES, TOOLS
from powercontext.mcp.dispatch import plan_call, result_from_answer
from powercontext.mcp.stdio import INSTRUCTIONS

__all__ = ["TOOL_NAMES", "build_server"]

BridgeFactory = Callable[[ServerRequestContext[Any, Any]], HttpBridge]


def build_server(bridge_for: BridgeFactory) -> Server[Any]:
    """A low-level SDK ``Server`` whose tools call the API through ``bridge_for(ctx)``."""
    listed = types.ListToolsResult(tools=[types.Tool.model_validate(tool.describe()) for tool in TOOLS])

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listed

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        planned = plan_call({"name": params.name, "arguments": params.arguments})
        if isinstance(planned, dict):
            return types.CallToolResult.model_validate(planned)
        answer = await bridge_for(ctx).call(*planned)
        return types.CallToolResult.model_validate(result_from_answer(answer))

    return Server(
        "powercontext",
        version=__version__,
        title="PowerContext",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
