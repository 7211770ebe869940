"""The ``powercontext`` command line."""
