"""``powercontext eval``: run a retrieval suite through prepare, score it, and explain every miss.

See docs/evaluation.md. The package talks to a Server only through ``PowerContextClient``.
"""
