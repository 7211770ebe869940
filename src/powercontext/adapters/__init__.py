"""Adapters for agent frameworks, each in its own optional extra (``pip install 'powercontext[llama-index]'``).

Every adapter asks the Server for a prepared context and hands the framework the prepared items, each with
its exact address (Scope, family, artifact id and revision, or the exact code range): ``prepared_items``
reads them back from the ``PreparedContext``. Importing this package imports no framework.
"""
