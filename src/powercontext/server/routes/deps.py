"""Route dependencies and shared OpenAPI error declarations."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request

from powercontext.contract.errors import ErrorBody
from powercontext.runtime import Runtime


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(_runtime)]


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the error envelope."""
    return {status: {"model": ErrorBody} for status in (*statuses, 422)}
