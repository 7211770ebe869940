"""The prepare pipeline: plan → round 0 → build → Receipt (fail-open).

It sits above ``recall/``, ``assembly/`` and ``receipt/`` and is the only module that runs them in
order; ``runtime.py`` builds one ``PreparePipeline`` and hands it the adapters.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pydantic import ValidationError

from powercontext.assembly.builder import PreparedContextBuild, PreparedContextBuilder, Section
from powercontext.contract.common import Family
from powercontext.contract.prepare import PrepareContextRequest, PreparedContext
from powercontext.domain.access import ScopeForbidden
from powercontext.domain.candidates import Candidate, CodeCandidate
from powercontext.domain.errors import RequestRefused
from powercontext.recall.readers import CodeReader, FamilyReader, RecallContext
from powercontext.recall.trace import RecallTrace
from powercontext.receipt.assembler import ReceiptAssembler, ReceiptEvidence, TraceReceiptAssembler
from powercontext.receipt.validation import (
    ReceiptRejected,
    model_wire_data,
    rejection_for,
    serialize_valid_receipt,
)
from powercontext.search.embedding import GuardedEmbedder, VectorChannel
from powercontext.store.base import Store
from powercontext.text.normalize import normalize_query

log = logging.getLogger("powercontext.receipt")

# Default recall (no ``assembly``): these families interleave by rank under the combined entry limit.
DEFAULT_FAMILIES: tuple[Family, ...] = ("atomic-memory", "topic-memory", "experience")
SECTION_FAMILY: dict[str, Family] = {
    "memory": "atomic-memory",
    "topic-memory": "topic-memory",
    "experience": "experience",
    "profile": "profile",
}


class FamilyDisabled(RequestRefused):
    code, status = "family-disabled", 409

    def __init__(self, family: str) -> None:
        super().__init__(f"the {family} family is disabled on this Server; remove its assembly section")


@dataclass(frozen=True)
class RecallPlan:
    """Which families one prepare reads, and how the Builder assembles them."""

    families: tuple[Family, ...]  # historical families in read order, then "code" when requested
    sections: tuple[Section, ...] | None  # None: the default interleaved recall


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


class PreparePipeline:
    """One prepare, start to finish, over the readers and components the composition root gives it."""

    def __init__(
        self,
        store: Store,
        embedder: GuardedEmbedder,
        readers: Mapping[Family, FamilyReader],
        code_reader: CodeReader | None,
        builder: PreparedContextBuilder,
        receipt_assembler: ReceiptAssembler,
        disabled_families: frozenset[str] = frozenset(),
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.readers = readers
        self.code_reader = code_reader
        self.builder = builder
        self.receipt_assembler = receipt_assembler
        self.disabled_families = disabled_families

    def prepare(
        self, request: PrepareContextRequest, request_id: str, may_read: Callable[[str], bool] = lambda _: True
    ) -> PrepareResult:
        """The PreparedContext (and Receipt bytes when asked). ``may_read`` is the caller's read grant: the
        request Scope must pass it, and referenced Scopes that do not are not recalled."""
        if not may_read(request.scope_id):
            raise ScopeForbidden("read")
        plan = self.plan(request)
        query = normalize_query(request.query)  # once: every search and the query digest reuse it
        trace = RecallTrace(requested_families=plan.families)
        with trace.stage("scope.context"):
            scope = self.store.get_scope(request.scope_id)
            scope_ids = (scope.scope_id, *(r for r in scope.context_references if may_read(r)))
        ctx = RecallContext(query, scope_ids, trace, VectorChannel(self.embedder))
        pools, code = self._round_zero(plan, ctx)
        with trace.stage("context.build"):
            build = self.builder.build(pools, request.max_bytes, sections=plan.sections, code=code)
        receipt_json = None
        if request.include_receipt:
            receipt_json = self._receipt(request, request_id, trace, build)
        return PrepareResult(build.context, receipt_json)

    def plan(self, request: PrepareContextRequest) -> RecallPlan:
        if request.assembly is None:
            families = tuple(f for f in DEFAULT_FAMILIES if f not in self.disabled_families)
            sections = None
        else:
            sections = tuple(Section(SECTION_FAMILY[s.family], s.limit) for s in request.assembly.sections)
            for section in sections:
                if section.family in self.disabled_families:
                    raise FamilyDisabled(section.family)
            families = tuple(s.family for s in sections)
        if request.include_code and "code" not in self.disabled_families:
            families += ("code",)
        return RecallPlan(families, sections)

    def _round_zero(
        self, plan: RecallPlan, ctx: RecallContext
    ) -> tuple[dict[Family, list[Candidate]], list[CodeCandidate]]:
        pools: dict[Family, list[Candidate]] = {}
        code: list[CodeCandidate] = []
        for family in plan.families:
            if family == "code":
                code = self._read_code(ctx)
                continue
            reader = self.readers.get(family)
            if reader is None:
                # Requested, but this Runtime has no reader for it: a skipped opportunity, not a search.
                ctx.trace.record_search(ctx.round, family, "none", "not_run", "none")
                pools[family] = []
                continue
            pools[family] = reader.read(ctx)
        ctx.trace.record_round(0, "completed", retained=True)
        return pools, code

    def _read_code(self, ctx: RecallContext) -> list[CodeCandidate]:
        """Code is queried once per prepare, for the request Scope (round 0)."""
        if self.code_reader is None:
            ctx.trace.record_search(0, "code", "none", "not_run", "none")
            return []
        return self.code_reader.read(ctx)

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
