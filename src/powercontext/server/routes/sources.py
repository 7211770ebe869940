"""Sources: capture (write grant), the exact read and the newest-first list (read grant).

Content is redacted before it is stored (``sources.redaction``) and never reaches a log, a span or a Receipt:
the request log names the route template, not the body.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from powercontext.contract.sources import (
    Extraction,
    Redaction,
    Source,
    SourceCreate,
    SourceCreated,
    SourceList,
)
from powercontext.runtime import Runtime
from powercontext.server.routes.deps import RuntimeDep, errors, scope_router
from powercontext.sources.lineage import source_ref_view
from powercontext.store import source_records as records
from powercontext.store.errors import FamilyUnsupported

router = scope_router("sources", "/sources")


def source_store_of(runtime: Runtime) -> records.SourceStore:
    """The runtime's store as a ``SourceStore``; ``family-unsupported`` (501) for a backend without Sources."""
    store = runtime.store
    if not isinstance(store, records.SourceStore):
        raise FamilyUnsupported()
    return store


def _summary(record: records.SourceRecord) -> SourceCreated:
    extraction = Extraction(
        status=record.status,
        reason=record.reason,
        attempts=record.attempts,
        writes=[key.to_address() for key in record.writes],
    )
    return SourceCreated(
        **source_ref_view(record.ref).model_dump(),
        content_digest=record.content_digest,
        redactions=[Redaction(type=kind, count=n) for kind, n in record.redactions],
        extraction=extraction,
    )


@router.post("", status_code=201, responses=errors(501), summary="Capture a Source (redacted before it is stored)")
def create_source(scope_id: str, body: SourceCreate, runtime: RuntimeDep) -> SourceCreated:
    """Stored at once, pending extraction; a background worker turns what it can into Atomic Memory."""
    origin = records.SourceOrigin(body.origin.host, body.origin.session_id, body.origin.turn)
    return _summary(runtime.writes.capture_source(scope_id, body.kind, body.content, body.observed_at, origin))


@router.get(
    "/{source_id}", responses=errors(410, 501), summary="Read a Source exactly: content, digest, origin, extraction"
)
def get_source(scope_id: str, source_id: str, runtime: RuntimeDep) -> Source:
    record = source_store_of(runtime).read_source(scope_id, source_id)
    return Source(**_summary(record).model_dump(), content=record.content, created_at=record.created_at)


@router.post(
    "/{source_id}/purge",
    responses=errors(501),
    summary="Erase a Source's content for good (irreversible); its exact read then answers 410 purged",
)
def purge_source(scope_id: str, source_id: str, runtime: RuntimeDep) -> SourceCreated:
    """What it wrote stays (purge those memories on their own); their lineage keeps naming the Source by id."""
    source_store_of(runtime)
    return _summary(runtime.writes.purge_source(scope_id, source_id))


@router.get("", responses=errors(501), summary="List Sources, newest first, a page at a time")
def list_sources(
    scope_id: str,
    runtime: RuntimeDep,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    cursor: Annotated[str | None, Query(max_length=18, pattern=r"^[0-9]+$")] = None,
) -> SourceList:
    before = int(cursor) if cursor is not None else None
    rows = source_store_of(runtime).list_sources(scope_id, before, limit + 1)
    page = rows[:limit]
    next_cursor = str(page[-1][0]) if len(rows) > limit else None
    return SourceList(items=[_summary(record) for _, record in page], next_cursor=next_cursor)
