"""Request ids and a content-free access log, as plain ASGI middleware (cheap on the hot path)."""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any

REQUEST_ID_HEADER = "X-PowerContext-Request-ID"
_HEADER_BYTES = REQUEST_ID_HEADER.lower().encode("ascii")

access_log = logging.getLogger("powercontext.access")
server_log = logging.getLogger("powercontext.server")

# What the access log and the metrics record for a request the app never answered because the client's side of
# the exchange ended first: uvicorn refused its framing (``Transfer-Encoding: gzip`` without ``chunked``, broken
# chunking) with its own plain-text 400 once the app had started, or the client went away mid-body. Either way
# nothing of ours reached the client and nothing failed here: not a 5xx.
UNANSWERED_STATUS = 400


class WatchedReceive:
    """An ASGI ``receive`` that notes whether it has reported the client gone (``http.disconnect``)."""

    __slots__ = ("gone", "receive")

    def __init__(self, receive: Any) -> None:
        self.receive = receive
        self.gone = False

    async def __call__(self) -> dict[str, Any]:
        message: dict[str, Any] = await self.receive()
        if message["type"] == "http.disconnect":
            self.gone = True
        return message


async def _send_internal_error(send: Any, request_id: str) -> None:
    body = json.dumps(
        {
            "error": {
                "code": "internal-error",
                "message": "the server failed unexpectedly; retry, and report it with this request_id if it persists",
                "request_id": request_id,
            }
        }
    ).encode("utf-8")
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode("ascii"))]
    await send({"type": "http.response.start", "status": 500, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class RequestIdMiddleware:
    """Gives every request a UUID (``scope["state"]["request_id"]``) and echoes it as a header.

    The access log names the route template, never the path: paths carry Scope and Artifact ids.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = str(uuid.uuid4())
        scope.setdefault("state", {})["request_id"] = request_id
        start = time.perf_counter()
        status = 500

        async def send_with_id(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message.setdefault("headers", []).append((_HEADER_BYTES, request_id.encode("ascii")))
            await send(message)

        started = False

        async def send_tracked(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send_with_id(message)

        watched = WatchedReceive(receive)
        try:
            await self.app(scope, watched, send_tracked)
        except Exception as exc:
            # Only the type is logged: exception messages can carry request content.
            server_log.error("event=request.failed error_type=%s request_id=%s", type(exc).__name__, request_id)
            if not started and not watched.gone:
                await _send_internal_error(send_with_id, request_id)
        finally:
            if not started and watched.gone:
                status = UNANSWERED_STATUS
            if access_log.isEnabledFor(logging.INFO):
                route = scope.get("route")
                template = getattr(route, "path", "unmatched")
                access_log.info(
                    "method=%s route=%s status=%s duration_ms=%.2f request_id=%s",
                    scope["method"],
                    template,
                    status,
                    (time.perf_counter() - start) * 1000.0,
                    request_id,
                )
