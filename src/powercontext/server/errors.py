"""Maps every failure to ``{"error": {code, message, request_id}}``; never a traceback, never input echo."""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any, get_args

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from powercontext.code.errors import CodeError
from powercontext.contract.messages import describe_error, location_of, readable_errors
from powercontext.domain.errors import RequestRefused
from powercontext.server.auth import refusal_before_validation
from powercontext.server.body_json import DUPLICATE_KEY
from powercontext.store.core.driver import sqlite
from powercontext.store.errors import StorageFault, StoreError, StoreUnavailable
from powercontext.store.faults import storage_fault
from powercontext.store.health import StoreHealth

_log = logging.getLogger("powercontext.server")
# Driver errors that are a bug of ours, not the store's state: they stay 500 internal-error.
_NOT_STORAGE = (sqlite.IntegrityError, sqlite.ProgrammingError, sqlite.InterfaceError, sqlite.NotSupportedError)

_HTTP_CODES = {404: "not-found", 405: "method-not-allowed", 413: "payload-too-large", 415: "unsupported-media-type"}


def request_id_of(request: Request) -> str:
    return str(getattr(request.state, "request_id", ""))


def error_response(request: Request, status: int, code: str, message: str) -> JSONResponse:
    body = {"error": {"code": code, "message": message, "request_id": request_id_of(request)}}
    return JSONResponse(body, status_code=status)


def log_storage_fault(request: Request, fault: StorageFault) -> None:
    """One content-free line naming the fault, so an operator reading the log sees the cause, not a 500."""
    _log.error(
        "event=store.fault cause=%s code=%s operation=%s request_id=%s",
        fault.cause,
        fault.code,
        fault.operation,
        request_id_of(request),
    )


def _validation_message(request: Request, exc: RequestValidationError) -> str:
    # Only the location and what is wrong: the offending input, an unknown key included, is never echoed.
    return "; ".join(
        _duplicate_message(request, err.get("loc", ()))
        if err.get("type") == DUPLICATE_KEY
        else describe_error(err, _accepted_fields(request, err.get("loc", ())), name_unknown=False)
        for err in readable_errors(exc.errors())[:5]
    )


def _duplicate_message(request: Request, loc: Sequence[Any]) -> str:
    """A key given twice, named only if the object there takes it: any other key may be someone's data."""
    if loc and loc[-1] in _accepted_fields(request, loc):
        return f"{location_of(loc)}: given more than once; send each key once"
    return f"{location_of(loc[:-1]) or 'body'}: a key is given more than once; send each key once"


def _accepted_fields(request: Request, loc: Sequence[Any]) -> list[str]:
    """The field names of the body object holding ``loc``'s last key (for an unknown-field message), found by
    walking the route's body model along ``loc``; empty where the walk does not reach a model."""
    if not loc or loc[0] != "body":
        return []
    body_field = getattr(request.scope.get("route"), "body_field", None)
    model = _model_in(getattr(getattr(body_field, "field_info", None), "annotation", None))
    for part in loc[1:-1]:
        if model is None:
            return []
        if isinstance(part, int):
            continue
        field = model.model_fields.get(str(part))
        model = _model_in(field.annotation if field else None)
    return [] if model is None else [f.alias or name for name, f in model.model_fields.items()]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The one pydantic model in ``annotation`` (itself, or inside ``list[...]``, ``... | None``, ``Annotated``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    models = {m for m in map(_model_in, get_args(annotation)) if m is not None}
    return models.pop() if len(models) == 1 else None


def refused_response(request: Request, exc: RequestRefused) -> JSONResponse:
    response = error_response(request, exc.status, exc.code, str(exc))
    response.headers.update(exc.headers)
    return response


def driver_error_response(request: Request, exc: Exception) -> JSONResponse:
    """A driver error that escaped the store's write transaction, so met by a read (a damaged page, an I/O
    error): the storage fault's stable code, noted for readiness too; a bug of ours stays 500 internal-error."""
    if isinstance(exc, _NOT_STORAGE):
        _log.error("event=request.failed error_type=%s request_id=%s", type(exc).__name__, request_id_of(request))
        return error_response(
            request,
            500,
            "internal-error",
            "the server failed unexpectedly; retry, and report it with this request_id if it persists",
        )
    fault = storage_fault(exc, "read")
    if fault is None:
        _log.warning("event=store.unavailable error_type=%s request_id=%s", type(exc).__name__, request_id_of(request))
        unavailable = StoreUnavailable()
        return error_response(request, unavailable.status, unavailable.code, str(unavailable))
    log_storage_fault(request, fault)
    health = getattr(getattr(getattr(request.app.state, "runtime", None), "store", None), "health", None)
    if isinstance(health, StoreHealth):  # readiness reports it too
        health.note_fault(fault)
    return error_response(request, fault.status, fault.code, str(fault))


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        # Authentication and the Scope grant come before what the body says, even when the body is broken.
        refusal = refusal_before_validation(request)
        if refusal is not None:
            return refused_response(request, refusal)
        return error_response(request, 422, "invalid-request", _validation_message(request, exc))

    @app.exception_handler(StoreError)
    async def _store(request: Request, exc: StoreError) -> JSONResponse:
        if isinstance(exc, StorageFault):
            log_storage_fault(request, exc)
        return error_response(request, exc.status, exc.code, str(exc))

    @app.exception_handler(sqlite.DatabaseError)
    async def _driver(request: Request, exc: Exception) -> JSONResponse:
        return driver_error_response(request, exc)

    @app.exception_handler(CodeError)
    async def _code(request: Request, exc: CodeError) -> JSONResponse:
        return error_response(request, exc.status, exc.code, str(exc))

    @app.exception_handler(RequestRefused)
    async def _refused(request: Request, exc: RequestRefused) -> JSONResponse:
        return refused_response(request, exc)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:  # FastAPI's "error parsing the body": bytes that are not UTF-8 JSON
            refusal = refusal_before_validation(request)
            if refusal is not None:
                return refused_response(request, refusal)
            return error_response(request, 422, "invalid-request", "the request body is not valid UTF-8 JSON")
        code = _HTTP_CODES.get(exc.status_code, "http-error")
        message = "no such endpoint" if exc.status_code == 404 else str(exc.detail)
        response = error_response(request, exc.status_code, code, message)
        response.headers.update(exc.headers or {})
        if exc.status_code == 405:
            response.headers["Allow"] = ", ".join(_allowed_methods(request))
        return response


def _allowed_methods(request: Request) -> list[str]:
    """The methods of the most specific path template matching this path, as the OpenAPI document lists
    them (the router names only its first matching route's; ``/atomic-memory/batch`` also fits
    ``/atomic-memory/{artifact_id}``, so the template with the fewest parameters wins)."""
    path = request.url.path
    table: list[tuple[re.Pattern[str], set[str]]] = request.app.state.route_methods
    matching = [(pattern.groups, methods) for pattern, methods in table if pattern.match(path)]
    fewest = min((groups for groups, _ in matching), default=0)
    return sorted({m for groups, methods in matching if groups == fewest for m in methods})
