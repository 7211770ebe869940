"""The one write service: every write of every family goes through ``service.WriteService``.

The HTTP routes, the MCP tools (which call those routes), the CLI (through the API) and the Server's background
workers all call it; nothing else writes Artifacts. It owns what a write needs besides the store's transaction:
the embedding of the new text, the supersession hint of a new Atomic Memory, and (with Sources) the lineage.
"""
