"""The checks a request passes before a byte of its body is read: its bearer token, then its body's size.

Plain ASGI middleware ahead of routing. Routing, dependency resolution and body parsing all come later,
so an unauthenticated caller cannot make the Server read, buffer or parse anything, and no body larger
than the largest valid request to its route (``server.body_limits``) is ever held: a declared
``Content-Length`` over the limit is refused at once, and a chunked body is counted as it arrives and
refused the moment it passes the limit.

A 413 closes the connection, but only after reading and discarding what the client still sends, up to
``LINGER_BYTES`` for ``LINGER_SECONDS``: a client that writes its whole body before it reads (httpx,
requests) then gets the answer rather than a connection reset. A body declared larger than that is not
waited for. A 401 closes at once: an unauthenticated caller gets no reading at all.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Collection
from typing import IO, Any

from powercontext.server.auth import AccessTable
from powercontext.server.body_limits import BodyLimits

Scope = dict[str, Any]
Message = dict[str, Any]

SPOOL_BYTES = 1 << 20  # a chunked body up to this size stays in memory; a larger one goes to a temporary file
REPLAY_PIECE_BYTES = 1 << 16
LINGER_BYTES = 128 << 20  # what is read and discarded after a 413, at most
LINGER_SECONDS = 10.0

UNAUTHENTICATED_MESSAGE = "send 'Authorization: Bearer <token>' with a token listed in the Server's access file"


def body_too_large_message(limit: int) -> str:
    return (
        f"the request body is larger than {limit} bytes, the size of the largest valid request to this route "
        "(limits.route_max_bytes in GET /v1/capabilities); send less per request"
    )


class RequestGate:
    """Authenticates (when an access table is set) and bounds the body, before routing.

    ``public_paths`` (probes, capabilities, the API schema) need no token. The principal found is left in
    ``scope["state"]["principal"]`` for the routes' own per-Scope checks.
    """

    def __init__(
        self, app: Any, *, access: AccessTable | None, body_limits: BodyLimits, public_paths: Collection[str]
    ) -> None:
        self.app = app
        self.access = access
        self.body_limits = body_limits
        self.public_paths = frozenset(public_paths)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        chunked = "transfer-encoding" in headers
        length = None if chunked else _content_length(headers.get("content-length"))
        body_pending = chunked or bool(length)
        if self.access is not None and scope["path"] not in self.public_paths:
            principal = self.access.principal_for(headers.get("authorization"))
            if principal is None:
                await _refuse(
                    scope,
                    send,
                    401,
                    "unauthenticated",
                    UNAUTHENTICATED_MESSAGE,
                    close=body_pending,
                    extra=[(b"www-authenticate", b"Bearer")],
                )
                return
            scope.setdefault("state", {})["principal"] = principal
        limit = self.body_limits.limit_for(scope["method"], scope["path"])
        if length is not None and length > limit:
            await self._too_large(scope, receive, send, limit, linger=length <= LINGER_BYTES)
            return
        if chunked:
            # No declared length: read it here, counting, so nothing past the limit is ever read. The bytes
            # go to a spooled file rather than a list of chunks: a body that turns out too large then never
            # held more than SPOOL_BYTES of memory (tens of MB of small freed chunks are not handed back to
            # the operating system, so the process would keep them).
            spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - closed on every path
            size = 0
            while True:
                message = await receive()
                if message["type"] != "http.request":  # the client went away
                    spool.close()
                    return
                chunk: bytes = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    spool.close()
                    more = message.get("more_body", False)
                    await self._too_large(scope, receive, send, limit, linger=more)
                    return
                spool.write(chunk)
                if not message.get("more_body", False):
                    break
            spool.seek(0)
            try:
                await self.app(scope, _replay(spool, size, receive), send)
            finally:
                spool.close()  # also when the app answered without reading the body
            return
        await self.app(scope, receive, send)

    async def _too_large(self, scope: Scope, receive: Any, send: Any, limit: int, *, linger: bool) -> None:
        message = body_too_large_message(limit)
        await _refuse(scope, send, 413, "body-too-large", message, close=True, more=linger)
        if linger:
            await _discard_rest(receive)
            await send({"type": "http.response.body", "body": b""})


async def _discard_rest(receive: Any) -> None:
    """Reads what the client still sends, bounded in bytes and time; the answer is already on the wire."""
    deadline = time.monotonic() + LINGER_SECONDS
    discarded = 0
    while discarded <= LINGER_BYTES and time.monotonic() < deadline:
        message = await receive()
        if message["type"] != "http.request":
            return
        discarded += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


def _replay(spool: IO[bytes], size: int, receive: Any) -> Any:
    """A ``receive`` that hands the app the body already read, in pieces, then the real one."""

    async def replayed() -> Message:
        if not spool.closed:
            piece = spool.read(REPLAY_PIECE_BYTES)
            more = spool.tell() < size
            if not more:
                spool.close()
            return {"type": "http.request", "body": piece, "more_body": more}
        message: Message = await receive()
        return message

    return replayed


def _headers(scope: Scope) -> dict[str, str]:
    # Repeated headers: the last wins here; the HTTP parser has already refused conflicting lengths.
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}


def _content_length(raw: str | None) -> int | None:
    if raw is None:
        return None
    try:
        return int(raw.strip())
    except ValueError:
        return None


async def _refuse(
    scope: Scope,
    send: Any,
    status: int,
    code: str,
    message: str,
    *,
    close: bool,
    extra: list[tuple[bytes, bytes]] | None = None,
    more: bool = False,
) -> None:
    """Sends the error answer whole; ``more`` leaves the exchange open (its last, empty message unsent)."""
    request_id = str(scope.get("state", {}).get("request_id", ""))
    body = json.dumps({"error": {"code": code, "message": message, "request_id": request_id}}).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode("ascii"))]
    headers += extra or []
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": more})
