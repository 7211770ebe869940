"""The composition root: the one place that wires adapters, and the prepare path itself."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import ValidationError

from powercontext import __version__
from powercontext.assembly.builder import Candidate, PreparedContextBuild, PreparedContextBuilder, round_robin
from powercontext.contract.capabilities import Capabilities, Limits
from powercontext.contract.common import PREPARED_CONTEXT_SCHEMA, RECEIPT_POLICY_ID, Family
from powercontext.contract.memory import MAX_BATCH_ITEMS, MAX_BODY_BYTES
from powercontext.contract.prepare import (
    DEFAULT_MAX_BYTES,
    MAX_MAX_BYTES,
    MAX_QUERY_CHARS,
    MIN_MAX_BYTES,
    PrepareContextRequest,
    PreparedContext,
)
from powercontext.recall.trace import RecallTrace
from powercontext.receipt.assembler import ReceiptAssembler, ReceiptEvidence, TraceReceiptAssembler
from powercontext.receipt.validation import (
    ReceiptRejected,
    model_wire_data,
    rejection_for,
    serialize_valid_receipt,
)
from powercontext.search.atomic import AVAILABLE_MODES, AtomicMemorySearch
from powercontext.settings import Settings
from powercontext.store.base import ScoredMemory, Store

log = logging.getLogger("powercontext.receipt")

ATOMIC_MEMORY: Family = "atomic-memory"
ATOMIC_CANDIDATE_LIMIT = 16


@dataclass(frozen=True)
class PrepareResult:
    """The PreparedContext, plus the Receipt's exact wire bytes when one was requested and built."""

    context: PreparedContext
    receipt_json: bytes | None

    def response_body(self) -> bytes:
        body = self.context.model_dump_json().encode("utf-8")
        if self.receipt_json is None:
            return body
        # Splice the validated bytes in, so the Receipt's measured size is the size returned.
        return body[:-1] + b',"receipt":' + self.receipt_json + b"}"


class Runtime:
    def __init__(
        self,
        store: Store,
        *,
        builder: PreparedContextBuilder | None = None,
        receipt_assembler: ReceiptAssembler | None = None,
    ) -> None:
        self.store = store
        self.atomic_search = AtomicMemorySearch(store)
        self.builder = builder or PreparedContextBuilder()
        self.receipt_assembler = receipt_assembler or TraceReceiptAssembler()

    @classmethod
    def from_settings(cls, settings: Settings) -> Runtime:
        from powercontext.store.sqlite import SqliteStore

        return cls(SqliteStore(settings.db_path))

    def close(self) -> None:
        self.store.close()

    def capabilities(self) -> Capabilities:
        return Capabilities(
            version=__version__,
            context_versions=[PREPARED_CONTEXT_SCHEMA],
            receipt_policies=[RECEIPT_POLICY_ID],
            families=[ATOMIC_MEMORY],
            search_modes=list(AVAILABLE_MODES),
            limits=Limits(
                max_bytes_min=MIN_MAX_BYTES,
                max_bytes_max=MAX_MAX_BYTES,
                max_bytes_default=DEFAULT_MAX_BYTES,
                query_max_chars=MAX_QUERY_CHARS,
                body_max_bytes=MAX_BODY_BYTES,
                batch_max_items=MAX_BATCH_ITEMS,
            ),
        )

    def prepare(self, request: PrepareContextRequest, request_id: str) -> PrepareResult:
        trace = RecallTrace(requested_families=(ATOMIC_MEMORY,))
        with trace.stage("scope.context"):
            scope = self.store.get_scope(request.scope_id)
            scope_ids = [scope.scope_id, *scope.context_references]
        per_scope: list[list[ScoredMemory]] = []
        for scope_id in scope_ids:
            with trace.stage("memory.search"):
                outcome = self.atomic_search.search(scope_id, request.query, "auto", ATOMIC_CANDIDATE_LIMIT)
            trace.record_search(0, ATOMIC_MEMORY, outcome.mode, "completed", outcome.fallback_reason)
            per_scope.append(outcome.hits)
        trace.record_round(0, "completed", retained=True)
        with trace.stage("context.build"):
            build = self.builder.build({ATOMIC_MEMORY: _merge_scope_hits(per_scope)}, request.max_bytes)
        receipt_json = None
        if request.include_receipt:
            receipt_json = self._receipt(request, request_id, trace, build)
        return PrepareResult(build.context, receipt_json)

    def _receipt(
        self, request: PrepareContextRequest, request_id: str, trace: RecallTrace, build: PreparedContextBuild
    ) -> bytes | None:
        """Fail-open: any problem drops the Receipt, logs one content-free line, and changes nothing else."""
        evidence = ReceiptEvidence(request_id, request.query, request.max_bytes, trace, build)
        assembler = self.receipt_assembler
        try:
            if type(assembler) is TraceReceiptAssembler:
                data = assembler.receipt_data(evidence)
            else:
                data = model_wire_data(assembler.assemble(evidence))
            return serialize_valid_receipt(data, build, request_id)
        except ReceiptRejected as exc:
            reason, error_type = exc.reason, "ReceiptRejected"
        except ValidationError as exc:
            reason, error_type = rejection_for(exc).reason, "ValidationError"
        except Exception as exc:  # an assembler bug must never block injection
            reason, error_type = "assembly_failed", type(exc).__name__
        log.warning(
            "event=context.receipt.omitted reason=%s error_type=%s receipt_id=%s", reason, error_type, request_id
        )
        return None


def _merge_scope_hits(per_scope: Sequence[Sequence[ScoredMemory]]) -> list[Candidate]:
    """Each Scope keeps its hit order; Scopes interleave, request Scope first (scores are not comparable)."""
    return [Candidate(h.record.key, h.record.kind, h.record.text) for h in round_robin(per_scope)]
