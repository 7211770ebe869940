"""Maps every failure to ``{"error": {code, message, request_id}}``; never a traceback, never input echo."""

from __future__ import annotations

import logging
import re

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from powercontext.code.errors import CodeError
from powercontext.contract.common import PATTERN_MESSAGES
from powercontext.domain.errors import RequestRefused
from powercontext.server.auth import refusal_before_validation
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


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        # Only the location and pydantic's message: the offending input is deliberately never echoed.
        location = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        if err.get("type") == "json_invalid":
            parts.append("the request body is not valid JSON")
        elif err.get("type") == "string_pattern_mismatch" and err.get("ctx", {}).get("pattern") in PATTERN_MESSAGES:
            parts.append(f"{location}: {PATTERN_MESSAGES[err['ctx']['pattern']]}")
        elif err.get("type") == "extra_forbidden":
            # The unknown key is the caller's own text, so it is not repeated back.
            parent = ".".join(str(p) for p in err.get("loc", ())[:-1] if p != "body") or "body"
            parts.append(f"{parent}: unknown field; the API schema lists the accepted fields")
        else:
            parts.append(f"{location}: {err.get('msg', 'invalid value')}")
    return "; ".join(parts)


def refused_response(request: Request, exc: RequestRefused) -> JSONResponse:
    response = error_response(request, exc.status, exc.code, str(exc))
    response.headers.update(exc.headers)
    return response


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        # Authentication and the Scope grant come before what the body says, even when the body is broken.
        refusal = refusal_before_validation(request)
        if refusal is not None:
            return refused_response(request, refusal)
        return error_response(request, 422, "invalid-request", _validation_message(exc))

    @app.exception_handler(StoreError)
    async def _store(request: Request, exc: StoreError) -> JSONResponse:
        if isinstance(exc, StorageFault):
            log_storage_fault(request, exc)
        return error_response(request, exc.status, exc.code, str(exc))

    @app.exception_handler(sqlite.DatabaseError)
    async def _driver(request: Request, exc: Exception) -> JSONResponse:
        # A driver error that escaped the store's write transaction: a read (a damaged page, an I/O error).
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
            _log.warning(
                "event=store.unavailable error_type=%s request_id=%s", type(exc).__name__, request_id_of(request)
            )
            unavailable = StoreUnavailable()
            return error_response(request, unavailable.status, unavailable.code, str(unavailable))
        log_storage_fault(request, fault)
        health = getattr(getattr(getattr(request.app.state, "runtime", None), "store", None), "health", None)
        if isinstance(health, StoreHealth):  # readiness reports it too
            health.note_fault(fault)
        return error_response(request, fault.status, fault.code, str(fault))

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
