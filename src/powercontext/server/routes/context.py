"""``POST /v1/context/prepare`` and its diagnostic twin ``POST /v1/context/explain``."""

from __future__ import annotations

from fastapi import Response

from powercontext.contract.explain import ContextExplanation, ExplainContextRequest
from powercontext.contract.prepare import PrepareContextRequest, PreparedContext
from powercontext.server.routes.deps import PrincipalDep, RequestIdDep, RuntimeDep, area_router, errors

# Both run one prepare: they answer the same errors.
router = area_router("context", "/v1/context", responses=errors(404, 409, 429, 503))


@router.post(
    "/prepare", response_model=PreparedContext, summary="Prepare one bounded, cited, injection-ready context string"
)
def prepare_context(
    body: PrepareContextRequest, request_id: RequestIdDep, runtime: RuntimeDep, principal: PrincipalDep
) -> Response:
    result = runtime.prepare(body, request_id, may_read=principal.can_read)
    # The body is written directly: its bytes are the ones the Receipt bound was measured on.
    return Response(result.response_body(), media_type="application/json")


@router.post(
    "/explain", summary="Run one prepare and report each candidate's ranks, scores, matched terms and fate (diagnostic)"
)
def explain_context(
    body: ExplainContextRequest, request_id: RequestIdDep, runtime: RuntimeDep, principal: PrincipalDep
) -> ContextExplanation:
    """The same request as prepare, plus optional ``expected`` ids. Not for agents: a debugging view of one run,
    whose ``prepared`` is exactly what that run returned. Items of Scopes the caller cannot read are not listed."""
    return runtime.explain(body, request_id, may_read=principal.can_read)
