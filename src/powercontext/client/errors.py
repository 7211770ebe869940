"""The client's errors, defined in ``powercontext.errors`` (which loads without the client) and re-exported here."""

from __future__ import annotations

from powercontext.errors import (
    Conflict,
    Forbidden,
    InvalidRequest,
    NotFound,
    PowerContextError,
    Unavailable,
    error_for,
    error_from_answer,
    unreachable,
    with_methods,
)

__all__ = [
    "Conflict",
    "Forbidden",
    "InvalidRequest",
    "NotFound",
    "PowerContextError",
    "Unavailable",
    "error_for",
    "error_from_answer",
    "unreachable",
    "with_methods",
]
