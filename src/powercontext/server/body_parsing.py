"""Large request bodies are parsed and validated on a worker thread, never on the event loop.

FastAPI parses a JSON body with ``json.loads`` and validates the result on the event loop; a 36 MB batch takes
seconds of CPU there, during which the probes and every other request wait. ``OffLoopBodyRoute`` reads a
body over ``OFF_LOOP_BODY_BYTES`` itself (that is I/O, on the loop), then parses and validates it on a worker
thread, and hands FastAPI the validated model, which it takes as is. The raw bytes are dropped as soon as they
are parsed, so a large request does not hold its body twice while it is validated and served.

Before a large body is read, a caller who may not use the route is refused (401/403), as FastAPI would after
validation: a read-only token cannot make the Server parse 36 MB.

Every body, small or large, is parsed here (``server.body_json``: a key given twice is refused, a number past
Python's digit limit is named as out of range), and only a body the route can read is read at all: one sent with
a ``Content-Encoding`` other than ``identity``, or without a JSON ``Content-Type``, is refused ``415
unsupported-media-type`` (after 401/403), where FastAPI read a compressed body as broken JSON and validated a
``text/plain`` one as a string ("Input should be a valid dictionary").
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import anyio.to_thread
from fastapi import Request, Response
from fastapi.routing import APIRoute
from pydantic import TypeAdapter, ValidationError

from powercontext.domain.errors import RequestRefused
from powercontext.server.auth import refusal_before_validation
from powercontext.server.body_json import body_error, loads_body, validation_error
from powercontext.server.stepped_json import loads_in_steps

__all__ = ["OFF_LOOP_BODY_BYTES", "OffLoopBodyRoute", "UnsupportedMediaType"]

OFF_LOOP_BODY_BYTES = 1 << 20
# One large body is parsed at a time: parsing holds the GIL, so parallel parses gain nothing on throughput,
# while every extra parsing thread is one more contender the event loop waits behind for the GIL.
_PARSERS = 1
_RELEASED = b" "  # what FastAPI sees as the body once it is parsed: non-empty, so it asks for the parsed value

Handler = Callable[[Request], Coroutine[Any, Any, Response]]

ENCODED_MESSAGE = (
    "this Server takes request bodies uncompressed: send the body without Content-Encoding "
    "(or with Content-Encoding: identity)"
)
NOT_JSON_MESSAGE = "this route takes a JSON body: send it with Content-Type: application/json"


class UnsupportedMediaType(RequestRefused):
    code = "unsupported-media-type"
    status = 415


class OffLoopBodyRoute(APIRoute):
    """An ``APIRoute`` whose large JSON bodies are parsed and validated off the event loop."""

    def get_route_handler(self) -> Handler:
        handler = super().get_route_handler()
        annotation = self.body_field.field_info.annotation if self.body_field is not None else None
        if annotation is None or self._embed_body_fields:
            return handler
        adapter: TypeAdapter[Any] = TypeAdapter(annotation)

        async def parse_bodies(request: Request) -> Response:
            chunked = "transfer-encoding" in request.headers
            declared = _declared_length(request)
            if not declared and not chunked:  # no body: the route answers as it does to an empty one
                return await handler(request)
            unreadable = _media_refusal(request)
            if unreadable is not None:
                raise refusal_before_validation(request) or unreadable
            if declared > OFF_LOOP_BODY_BYTES or chunked:
                refusal = refusal_before_validation(request)
                if refusal is not None:
                    raise refusal
                body: bytes | bytearray = await _read(request)
            else:
                body = await request.body()
            if len(body) > OFF_LOOP_BODY_BYTES:
                holder = [body]
                del body  # the worker drops the last reference once the bytes are parsed
                parsers = _shared_parsers()
                request._json = await anyio.to_thread.run_sync(_validate, adapter, holder, limiter=parsers)
                request._body = _RELEASED
            elif body:
                try:
                    request._json = loads_body(body)
                except (ValueError, RecursionError) as exc:
                    raise body_error(body, exc, adapter) from None
                request._body = bytes(body)
            else:
                request._body = b""
            return await handler(request)

        return parse_bodies


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


def _media_refusal(request: Request) -> UnsupportedMediaType | None:
    """415 for a body the route cannot read: encoded (compressed), or not declared JSON (FastAPI's own test)."""
    codings = ",".join(request.headers.getlist("content-encoding")).lower()
    if any(coding.strip() not in ("", "identity") for coding in codings.split(",")):
        return UnsupportedMediaType(ENCODED_MESSAGE)
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind == "application/json" or (kind.startswith("application/") and kind.endswith("+json")):
        return None
    return UnsupportedMediaType(NOT_JSON_MESSAGE)


async def _read(request: Request) -> bytearray:
    # One growing buffer rather than a list of chunks joined at the end: one copy of the body, not two.
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
    return body


def _validate(adapter: TypeAdapter[Any], holder: list[bytes | bytearray]) -> Any:
    # Parsed to Python values in steps (``stepped_json``), then validated as FastAPI validates a small body
    # (the same rules, the same errors). One ``validate_json`` or ``from_json`` call holds the GIL for the
    # whole document (0.3-0.5 s for 36 MB); validation alone lets it go between items.
    raw = holder.pop()
    try:
        value = loads_in_steps(raw)
    except (ValueError, RecursionError) as exc:
        raise body_error(raw, exc, adapter) from None
    del raw  # parsed: the bytes are not held while the value is validated and served
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        raise validation_error(exc) from None
