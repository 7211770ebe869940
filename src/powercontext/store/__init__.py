"""Storage: the ``Store`` protocol and its adapters."""
