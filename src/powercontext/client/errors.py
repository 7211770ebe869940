"""The errors a client raises: one ``PowerContextError`` base, one subclass per family of failure.

The family follows the HTTP status of the Server's answer (the stable ``code`` stays on the exception),
so a caller can write ``except NotFound`` without listing codes, and still ``except PowerContextError``
for everything.
"""

from __future__ import annotations

__all__ = [
    "Conflict",
    "Forbidden",
    "InvalidRequest",
    "NotFound",
    "PowerContextError",
    "Unavailable",
    "error_for",
    "with_methods",
]

import re

# Server messages name HTTP routes (they are written for every client); a Python caller wants the method.
_ROUTE_METHODS = (
    (re.compile(r"POST /v1/scopes\b(?!/)"), "client.create_scope(scope_id, title)"),
    (re.compile(r"PUT /v1/scopes/\{scope_id\}/profile"), "client.set_profile(scope_id, entries, expected_revision=0)"),
)


def with_methods(message: str) -> str:
    """``message`` with each HTTP route it names replaced by the client method that calls it."""
    for pattern, method in _ROUTE_METHODS:
        message = pattern.sub(method, message)
    return message


class PowerContextError(Exception):
    """An error answer from the Server (or no answer at all, with code ``server-unreachable``).

    ``status`` is the HTTP status (0 when nothing answered), ``code`` the Server's stable error code,
    ``message`` its actionable sentence, ``request_id`` the id to quote in a report.
    """

    def __init__(self, status: int, code: str, message: str, request_id: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id


class NotFound(PowerContextError):
    """404: the Scope, artifact, revision, Candidate or code range does not exist (or may not be read)."""


class Conflict(PowerContextError):
    """409: the write lost a race or meets a state it cannot change (``revision-conflict``, ``scope-exists``…)."""


class Forbidden(PowerContextError):
    """401 or 403: no valid token, or the token's principal lacks the grant (or the operation is off)."""


class Unavailable(PowerContextError):
    """No answer (``server-unreachable``), 503 (a store or provider is down), 507 (the store's disk is full) or 501
    (not supported here)."""


class InvalidRequest(PowerContextError):
    """400, 413 or 422: the request itself is wrong; the message names the field."""


def error_for(status: int, code: str, message: str, request_id: str | None = None) -> PowerContextError:
    """The exception of the right family for an error answer."""
    family: type[PowerContextError] = PowerContextError
    if status == 0 or status in (501, 502, 503, 504, 507):  # 507: store-full
        family = Unavailable
    elif status == 404:
        family = NotFound
    elif status == 409:
        family = Conflict
    elif status in (401, 403):
        family = Forbidden
    elif status in (400, 405, 413, 415, 422):
        family = InvalidRequest
    return family(status, code, message, request_id)
