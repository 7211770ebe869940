"""Refusals that reach the caller as a 4xx/5xx with a stable code (the Server maps them generically)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar


class RequestRefused(Exception):
    """A request this Server will not carry out; ``str(exc)`` is a message a person can act on."""

    code: str = "request-refused"
    status: int = 409
    headers: ClassVar[Mapping[str, str]] = {}
