"""Adapters for agent frameworks, each in its own optional extra (``pip install 'powercontext[llama-index]'``).

The retrievers and the Agents SDK hook ask the Server for a prepared context and hand the framework the
prepared items, each with its exact address (Scope, family, artifact id and revision, or the exact code range):
``prepared_items`` reads them back from the ``PreparedContext``. The LangGraph store keeps a graph's memories
as Atomic Memory. Importing this package imports no framework.
"""
