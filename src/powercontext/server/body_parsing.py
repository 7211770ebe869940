"""Large request bodies are parsed and validated on a worker thread, never on the event loop.

FastAPI parses a JSON body with ``json.loads`` and validates the result on the event loop; a 36 MB batch takes
seconds of CPU there, during which the probes and every other request wait. ``OffLoopBodyRoute`` reads a
body over ``OFF_LOOP_BODY_BYTES`` itself (that is I/O, on the loop), then parses and validates it on a worker
thread, and hands FastAPI the validated model, which it takes as is. The raw bytes are dropped as soon as they
are parsed, so a large request does not hold its body twice while it is validated and served.

Before a large body is read, a caller who may not use the route is refused (401/403), as FastAPI would after
validation: a read-only token cannot make the Server parse 36 MB.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import anyio.to_thread
from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import TypeAdapter, ValidationError

from powercontext.server.auth import refusal_before_validation
from powercontext.server.stepped_json import loads_in_steps

__all__ = ["OFF_LOOP_BODY_BYTES", "OffLoopBodyRoute"]

OFF_LOOP_BODY_BYTES = 1 << 20
# One large body is parsed at a time: parsing holds the GIL, so parallel parses gain nothing on throughput,
# while every extra parsing thread is one more contender the event loop waits behind for the GIL.
_PARSERS = 1
_RELEASED = b" "  # what FastAPI sees as the body once it is parsed: non-empty, so it asks for the parsed value

Handler = Callable[[Request], Coroutine[Any, Any, Response]]


class OffLoopBodyRoute(APIRoute):
    """An ``APIRoute`` whose large JSON bodies are parsed and validated off the event loop."""

    def get_route_handler(self) -> Handler:
        handler = super().get_route_handler()
        annotation = self.body_field.field_info.annotation if self.body_field is not None else None
        if annotation is None or self._embed_body_fields:
            return handler
        adapter: TypeAdapter[Any] = TypeAdapter(annotation)

        async def parse_large_bodies_off_loop(request: Request) -> Response:
            if _declared_length(request) > OFF_LOOP_BODY_BYTES or "transfer-encoding" in request.headers:
                refusal = refusal_before_validation(request)
                if refusal is not None:
                    raise refusal
                body = await _read(request)
                if len(body) > OFF_LOOP_BODY_BYTES and _is_json(request):
                    holder = [body]
                    del body  # the worker drops the last reference once the bytes are parsed
                    parsers = _shared_parsers()
                    request._json = await anyio.to_thread.run_sync(_validate, adapter, holder, limiter=parsers)
                    request._body = _RELEASED
                else:
                    request._body = bytes(body)
            return await handler(request)

        return parse_large_bodies_off_loop


_LIMITER: list[anyio.CapacityLimiter] = []


def _shared_parsers() -> anyio.CapacityLimiter:
    """The one limiter every route shares, made on first use (anyio makes it inside a running event loop)."""
    if not _LIMITER:
        _LIMITER.append(anyio.CapacityLimiter(_PARSERS))
    return _LIMITER[0]


def _declared_length(request: Request) -> int:
    try:
        return int(request.headers.get("content-length", "0"))
    except ValueError:
        return 0


def _is_json(request: Request) -> bool:
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json"))


async def _read(request: Request) -> bytearray:
    # One growing buffer rather than a list of chunks joined at the end: one copy of the body, not two.
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
    return body


def _validate(adapter: TypeAdapter[Any], holder: list[bytearray]) -> Any:
    # Parsed to Python values in steps (``stepped_json``), then validated as FastAPI validates a small body
    # (the same rules, the same errors). One ``validate_json`` or ``from_json`` call holds the GIL for the
    # whole document (0.3-0.5 s for 36 MB); validation alone lets it go between items.
    try:
        value = loads_in_steps(holder.pop())
    except ValueError:
        invalid = {"type": "json_invalid", "loc": ("body", 0), "msg": "JSON decode error", "ctx": {}}
        raise RequestValidationError([invalid]) from None
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        # The same shape FastAPI gives its own body errors: locations under "body", no input echoed.
        errors = [
            {"type": e["type"], "loc": ("body", *e["loc"]), "msg": e["msg"], "ctx": e.get("ctx", {})}
            for e in exc.errors(include_url=False, include_input=False)
        ]
        raise RequestValidationError(errors) from None
