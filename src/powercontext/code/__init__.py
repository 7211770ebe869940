"""Code evidence: index a work tree into cited line ranges, and read exact ranges back.

Pure rules live in small modules (``lines``, ``language``, ``identifiers``, ``chunking``, ``ignore``,
``paths``, ``discovery``, ``fingerprint``); ``indexer`` and ``reader`` apply them against a ``CodeStore``.
"""
