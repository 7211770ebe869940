"""The PowerContext MCP tool surface (official ``mcp`` SDK; install the ``mcp`` extra).

Every tool is a thin call to the HTTP API, so tool inputs are validated exactly as the API validates
them, authorization is the API's, and a failing tool reports the API's stable error code.
``prepare_context`` is deliberately not a tool (RFC 0028/1435): automatic recall belongs to host hooks.
"""
