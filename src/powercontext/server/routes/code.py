"""Code evidence: register/refresh a work tree, query it, read exact ranges."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Annotated

from fastapi import Query

from powercontext.code.errors import CodeUnavailable
from powercontext.code.paths import MAX_PATH_CHARS
from powercontext.code.reader import read_snippet
from powercontext.contract.code import (
    CodeIndexRequest,
    CodeIndexResult,
    CodeQueryHit,
    CodeQueryRequest,
    CodeQueryResult,
    CodeSnippetResult,
)
from powercontext.contract.common import MAX_REVISION
from powercontext.domain.identity import code_evidence_ref
from powercontext.runtime import Runtime
from powercontext.server.routes.deps import RuntimeDep, errors, scope_router
from powercontext.store.code import CodeStore

router = scope_router("code", "/code")
log = logging.getLogger("powercontext.code")

Sha256 = Annotated[str, Query(pattern=r"^sha256:[0-9a-f]{64}$")]
Line = Annotated[int, Query(ge=1, le=MAX_REVISION)]


def _code_store(runtime: Runtime) -> CodeStore:
    store = runtime.store
    if isinstance(store, CodeStore):
        return store
    raise CodeUnavailable()


@router.post(
    "/index",
    responses=errors(503),
    summary="Register a work tree on the Server's file system, or re-index it incrementally",
)
def index_code(scope_id: str, body: CodeIndexRequest, runtime: RuntimeDep) -> CodeIndexResult:
    """Needs the ``index`` grant. The path must lie in one of the directories the operator listed in
    ``POWERCONTEXT_CODE_ROOTS`` once symlinks are resolved (403 ``code-root-forbidden`` otherwise, and always
    when none are listed); a path that is not a readable directory is 422 ``invalid-code-path``."""
    # The Scope first: an unknown Scope never costs a file-system walk.
    runtime.store.get_scope(scope_id)
    store = _code_store(runtime)
    start = time.perf_counter()
    report = runtime.code_indexer(store).index(scope_id, Path(body.path), max_file_bytes=body.max_file_bytes)
    log.info(
        "event=code.index kind=%s files_seen=%d files_indexed=%d files_removed=%d chunks=%d duration_ms=%.1f",
        report.kind,
        report.files_seen,
        report.files_indexed,
        report.files_removed,
        report.chunks,
        (time.perf_counter() - start) * 1000.0,
    )
    return report.to_wire()


@router.post(
    "/query",
    responses=errors(503),
    summary="Search the indexed code of every work tree of the Scope",
)
def query_code(scope_id: str, body: CodeQueryRequest, runtime: RuntimeDep) -> CodeQueryResult:
    runtime.store.get_scope(scope_id)
    _code_store(runtime)  # 503 code-unavailable on a backend without code evidence
    assert runtime.code_search is not None
    hits = runtime.code_search.query(scope_id, body.query, body.limit)
    return CodeQueryResult(
        hits=[
            CodeQueryHit(code_evidence=code_evidence_ref(h), language=h.language, text=h.text, score=h.score)
            for h in hits
        ]
    )


@router.get(
    "/snippet",
    responses=errors(409, 503),
    summary="Read exact lines of an indexed file, if the file on disk still has the cited file_sha256",
)
def read_code_snippet(
    scope_id: str,
    runtime: RuntimeDep,
    fingerprint: Annotated[str, Query(min_length=1, max_length=128)],
    path: Annotated[str, Query(min_length=1, max_length=MAX_PATH_CHARS)],
    file_sha256: Sha256,
    start_line: Line,
    end_line: Line,
) -> CodeSnippetResult:
    store = _code_store(runtime)
    read = read_snippet(
        store,
        scope_id,
        fingerprint,
        path,
        file_sha256,
        start_line,
        end_line,
        allow_hardlinks=runtime.code_allow_hardlinks,
    )
    return CodeSnippetResult(code_evidence=code_evidence_ref(read), text=read.text)
