"""The errors a client raises: one ``PowerContextError`` base, one subclass per family of failure.

The family follows the HTTP status of the Server's answer (the stable ``code`` stays on the exception),
so a caller can write ``except NotFound`` without listing codes, and still ``except PowerContextError``
for everything. Only the standard library is imported: the CLI's short route (``cli.quick``) tells the same
errors without loading the client. ``powercontext.client.errors`` re-exports these names.
"""

from __future__ import annotations

__all__ = [
    "ClientClosed",
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

import json
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
    """404: the Scope, artifact, revision, Candidate or code range does not exist (a Scope the token may not read
    is ``Forbidden`` ``scope-forbidden`` instead)."""


class Conflict(PowerContextError):
    """409: the write lost a race or meets a state it cannot change (``revision-conflict``, ``scope-exists``…)."""


class Forbidden(PowerContextError):
    """401 or 403: no valid token, or the token's principal lacks the grant (``scope-forbidden``: it may not read,
    write, index or delete that Scope), or the operation is off."""


class Unavailable(PowerContextError):
    """No answer (``server-unreachable``), 503 (a store or provider is down), 507 (the store's disk is full) or 501
    (not supported here)."""


class InvalidRequest(PowerContextError):
    """400, 413 or 422: the request itself is wrong; the message names the field. The client checks a body before
    sending it: what it refuses is ``422`` ``invalid-request`` in the Server's words, with pydantic's
    ``ValidationError`` as ``__cause__`` where pydantic refused it, and nothing is sent."""


class ClientClosed(PowerContextError, RuntimeError):
    """A method was called after ``close()`` (``aclose()``, or the end of the ``with`` block): nothing was sent.
    Status 0, code ``client-closed``; also a ``RuntimeError``, as the mistake is the caller's code, not the
    Server's answer."""

    def __init__(self) -> None:
        super().__init__(0, "client-closed", "this client is closed; make a new one (or call it inside its with block)")


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


URL_HINT = "is the base URL the Server's own, e.g. http://127.0.0.1:8765 (without /v1)?"


def error_from_answer(status: int, body: bytes, path: str, base_url: str) -> PowerContextError:
    """The exception for an error answer (``status`` >= 400) to a request for ``path``; ``base_url`` as it may be
    shown (credentials masked)."""
    try:
        err = json.loads(body)["error"]
        code, message = str(err["code"]), str(err["message"])
    except (ValueError, KeyError, TypeError):
        if status == 404:  # not a PowerContext answer at all: most likely the wrong URL
            return error_for(404, "not-found", f"{base_url} answered 404 without a PowerContext error; {URL_HINT}")
        return error_for(status, "http-error", f"HTTP {status}")
    if code == "not-found":  # no route at this path: the base URL has a prefix the Server does not serve
        message = f"{message} at {path}; {URL_HINT}"
    request_id = err.get("request_id")
    return error_for(status, code, with_methods(message), request_id if isinstance(request_id, str) else None)


def unreachable(base_url: str, cause: str) -> Unavailable:
    """No answer from the Server at ``base_url`` (credentials masked); ``cause`` names the failure (``ConnectError``,
    ``ReadTimeout``)."""
    return Unavailable(0, "server-unreachable", f"no answer from {base_url} ({cause}); is it running?")
