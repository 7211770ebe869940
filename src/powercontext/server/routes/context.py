"""``POST /v1/context/prepare`` and its diagnostic twin ``POST /v1/context/explain``."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from powercontext.contract.explain import ContextExplanation, ExplainContextRequest
from powercontext.contract.prepare import PrepareContextRequest, PreparedContext
from powercontext.server.body_parsing import OffLoopBodyRoute
from powercontext.server.errors import request_id_of
from powercontext.server.routes.deps import PrincipalDep, RuntimeDep, errors

router = APIRouter(prefix="/v1/context", tags=["context"], route_class=OffLoopBodyRoute)


@router.post(
    "/prepare",
    operation_id="prepare_context",
    response_model=PreparedContext,
    responses=errors(404, 409, 503),
    summary="Prepare one bounded, cited, injection-ready context string",
)
def prepare(body: PrepareContextRequest, request: Request, runtime: RuntimeDep, principal: PrincipalDep) -> Response:
    result = runtime.prepare(body, request_id_of(request), may_read=principal.can_read)
    # The body is written directly: its bytes are the ones the Receipt bound was measured on.
    return Response(result.response_body(), media_type="application/json")


@router.post(
    "/explain",
    operation_id="explain_context",
    response_model=ContextExplanation,
    responses=errors(404, 409, 503),
    summary="Run one prepare and report each candidate's ranks, scores, matched terms and fate (diagnostic)",
)
def explain(
    body: ExplainContextRequest, request: Request, runtime: RuntimeDep, principal: PrincipalDep
) -> ContextExplanation:
    """The same request as prepare, plus optional ``expected`` ids. Not for agents: a debugging view of one run,
    whose ``prepared`` is exactly what that run returned. Items of Scopes the caller cannot read are not listed."""
    return runtime.explain(body, request_id_of(request), may_read=principal.can_read)
