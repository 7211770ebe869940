"""The prepare pipeline: plan → round 0 → expansion rounds → rerank → build → Receipt (fail-open).

It sits above ``recall/``, ``assembly/`` and ``receipt/`` and is the only module that runs them in
order; ``runtime.py`` builds one ``PreparePipeline`` and hands it the adapters.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

from pydantic import ValidationError

from powercontext import observe
from powercontext.assembly.builder import PreparedContextBuild, PreparedContextBuilder, Section
from powercontext.contract.common import Family
from powercontext.contract.prepare import PrepareContextRequest, PreparedContext
from powercontext.contract.receipt import OmissionReason
from powercontext.domain.access import ScopeForbidden
from powercontext.domain.candidates import CANDIDATE_LIMITS, Candidate, CodeCandidate, round_robin
from powercontext.domain.errors import RequestRefused
from powercontext.inference.generation_config import DEFAULT_MAX_REQUESTS
from powercontext.prompts.definitions import resolve_builtin
from powercontext.recall.admission import HeavyPrepareGate
from powercontext.recall.budget import DEFAULT_PREPARE_DEADLINE_MS, PrepareBudget
from powercontext.recall.expansion import MAX_ROUNDS_AFTER_ZERO, Expander, ExpansionFailed
from powercontext.recall.fanout import scope_share, searched_scopes
from powercontext.recall.probe import ExplainProbe
from powercontext.recall.readers import CodeReader, FamilyReader, RecallContext, ScopePools, SearchableReader
from powercontext.recall.rerank import MemoryReranker, PromptResolver, rerank_scopes, will_invoke
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
from powercontext.store.core.terms import search_share
from powercontext.text.normalize import normalize_query

log = logging.getLogger("powercontext.receipt")
recall_log = logging.getLogger("powercontext.recall")

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


@dataclass
class RecallPools:
    """What the rounds retrieved: searched families per Scope (so rounds can merge and rerank per Scope),
    the others as one list each, and code."""

    groups: dict[Family, ScopePools] = field(default_factory=dict)
    lists: dict[Family, list[Candidate]] = field(default_factory=dict)
    code: list[CodeCandidate] = field(default_factory=list)

    def for_builder(self, families: tuple[Family, ...]) -> dict[Family, list[Candidate]]:
        """One pool per family in plan order (the Builder interleaves in that order); Scopes round-robin."""
        pools: dict[Family, list[Candidate]] = {}
        for family in families:
            if family in self.groups:
                pools[family] = round_robin([pool for _, pool in self.groups[family]])
            elif family in self.lists:
                pools[family] = self.lists[family]
        return pools


@dataclass(frozen=True)
class PrepareResult:
    """The PreparedContext, plus the Receipt's exact wire bytes when one was requested and built."""

    context: PreparedContext
    receipt_json: bytes | None
    # What the explain route reads back: the Scopes recalled (request first) and the code candidates in rank order.
    scope_ids: tuple[str, ...] = ()
    code: Sequence[CodeCandidate] = ()

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
        *,
        reranker: MemoryReranker | None = None,
        expander: Expander | None = None,
        resolve_prompt: PromptResolver = resolve_builtin,
        deadline_s: float = DEFAULT_PREPARE_DEADLINE_MS / 1000,
        model_call_limit: int = DEFAULT_MAX_REQUESTS,
        heavy_gate: HeavyPrepareGate | None = None,
    ) -> None:
        """``deadline_s`` bounds the provider calls of one prepare together; ``model_call_limit`` the
        generation-model calls (expansion and rerank together)."""
        self.store = store
        self.embedder = embedder
        self.readers = readers
        # Decided once: an isinstance check against a Protocol costs ~0.2 ms, too much for every read.
        self.searchable: dict[Family, SearchableReader] = {
            family: reader for family, reader in readers.items() if isinstance(reader, SearchableReader)
        }
        self.code_reader = code_reader
        self.builder = builder
        self.receipt_assembler = receipt_assembler
        self.disabled_families = disabled_families
        self.reranker = reranker
        self.expander = expander
        self.resolve_prompt = resolve_prompt
        self.deadline_s = deadline_s
        self.model_call_limit = model_call_limit
        self.heavy_gate = heavy_gate or HeavyPrepareGate()
        # Per-Scope pool sizes; with a reranker, Atomic Memory's coarse pool is its candidate_limit.
        self.limits: dict[Family, int] = dict(CANDIDATE_LIMITS)
        if reranker is not None:
            self.limits["atomic-memory"] = max(CANDIDATE_LIMITS["atomic-memory"], reranker.candidate_limit)

    def prepare(
        self,
        request: PrepareContextRequest,
        request_id: str,
        may_read: Callable[[str], bool] = lambda _: True,
        probe: ExplainProbe | None = None,
    ) -> PrepareResult:
        """The PreparedContext (and Receipt bytes when asked). ``may_read`` is the caller's read grant: the
        request Scope must pass it, and referenced Scopes that do not are not recalled. ``probe`` (the explain
        route only) records each candidate's ranks, scores and fate as this run decides them."""
        if not may_read(request.scope_id):
            raise ScopeForbidden("read", grant="read")
        plan = self.plan(request)
        query = normalize_query(request.query)  # once: every search and the query digest reuse it
        budget = PrepareBudget.start(self.deadline_s, self.model_call_limit)
        trace = RecallTrace(requested_families=plan.families, budget=budget, probe=probe)
        try:
            # Every provider call of this prepare ends by the prepare's deadline at the latest.
            with budget.deadline.applied():
                return self._run(request, request_id, may_read, plan, query, trace)
        finally:
            trace.finish()  # stage spans go out even when a stage failed

    def _run(
        self,
        request: PrepareContextRequest,
        request_id: str,
        may_read: Callable[[str], bool],
        plan: RecallPlan,
        query: str,
        trace: RecallTrace,
    ) -> PrepareResult:
        with trace.stage("scope.context"):
            scope = self.store.get_scope(request.scope_id)
            scope_ids = searched_scopes((scope.scope_id, *(r for r in scope.context_references if may_read(r))))
        # Cost bounds (recall/fanout.py, recall/admission.py): a heavy prepare waits for its turn, within its deadline.
        with (
            self.heavy_gate.admitted(len(scope_ids), trace.budget.deadline.remaining()),
            search_share(scope_share(len(scope_ids))),
        ):
            return self._recall_and_build(request, request_id, may_read, plan, query, trace, scope_ids)

    def _recall_and_build(
        self,
        request: PrepareContextRequest,
        request_id: str,
        may_read: Callable[[str], bool],
        plan: RecallPlan,
        query: str,
        trace: RecallTrace,
        scope_ids: tuple[str, ...],
    ) -> PrepareResult:
        ctx = RecallContext(query, scope_ids, trace, VectorChannel(self.embedder))
        recall = self._round_zero(plan, ctx)
        if trace.probe is not None:
            trace.probe.remember(c for groups in recall.groups.values() for _, pool in groups for c in pool)
            trace.probe.remember(c for pool in recall.lists.values() for c in pool)
        last_round = self._expand(ctx, recall) if self.expander is not None else 0
        atomic = recall.groups.get("atomic-memory")
        if self.reranker is not None and atomic:
            # Rerank is part of Memory search (RFC 0080): one more instance of that stage, when it runs.
            stage: AbstractContextManager[None] = (
                trace.stage("memory.search") if will_invoke(self.reranker, atomic, trace.budget) else nullcontext()
            )
            with stage:
                kept = rerank_scopes(
                    self.reranker, self.resolve_prompt, query, atomic, CANDIDATE_LIMITS["atomic-memory"],
                    last_round, trace,
                )  # fmt: skip
            recall.groups["atomic-memory"] = [(s, pool) for (s, _), pool in zip(atomic, kept, strict=True)]
        pools = recall.for_builder(plan.families)
        with trace.stage("context.build"):
            build = self.builder.build(
                pools, request.max_bytes, sections=plan.sections, code=recall.code, fates=trace.probe
            )
            selected = len(build.items) + len(build.code_items)
            observe.note_build(
                build.context.status,
                build.context.content_bytes,
                selected,
                sum(build.omissions.values()),
                trace.active_span,
            )
        receipt_json = None
        if request.include_receipt:
            with trace.span("receipt"):
                receipt_json = self._receipt(request, request_id, trace, build)
        return PrepareResult(build.context, receipt_json, scope_ids, recall.code)

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

    def _round_zero(self, plan: RecallPlan, ctx: RecallContext) -> RecallPools:
        recall = RecallPools()
        for family in plan.families:
            if family == "code":
                recall.code = self._read_code(ctx)
                continue
            reader = self.readers.get(family)
            searchable = self.searchable.get(family)
            if searchable is not None:
                recall.groups[family] = searchable.read_groups(ctx, self.limits.get(family))
            elif reader is not None:
                recall.lists[family] = reader.read(ctx)
            else:
                # Requested, but this Runtime has no reader for it: a skipped opportunity, not a search.
                ctx.trace.record_search(ctx.round, family, "none", "not_run", "none")
                recall.lists[family] = []
        ctx.trace.record_round(0, "completed", retained=True)
        return recall

    def _expand(self, ctx: RecallContext, recall: RecallPools) -> int:
        """Expansion rounds while round 0's searched pools are thin; returns the last retained round.

        All or nothing: when a round fails, every expansion round is abandoned (their searches still count,
        their pools and exclusions do not) and the round-0 pools are what the prepare uses.
        """
        assert self.expander is not None
        trace = ctx.trace
        merged = {family: [(s, list(pool)) for s, pool in groups] for family, groups in recall.groups.items()}
        pending: Counter[tuple[Family, OmissionReason]] = Counter()
        executed: list[int] = []
        decided = None if trace.probe is None else trace.probe.checkpoint()
        for round in range(1, MAX_ROUNDS_AFTER_ZERO + 1):
            thin = [f for f, groups in merged.items() if any(len(p) < self.limits[f] for _, p in groups)]
            if not thin:
                break
            try:
                seeds = round_robin([pool for groups in merged.values() for _, pool in groups])
                expanded = self.expander.round_query(round, ctx.query, ctx.scope_ids[0], seeds, trace)
                if expanded is None:
                    break
                round_ctx = RecallContext(normalize_query(expanded), ctx.scope_ids, trace, ctx.channel, round)
                for family in thin:
                    found = self.searchable[family].read_groups(round_ctx, self.limits[family])
                    if trace.probe is not None:
                        trace.probe.remember(c for _, pool in found for c in pool)
                    merged[family] = self._merge(family, merged[family], found, pending, trace.probe)
            except Exception as exc:  # a round is all or nothing; any failure abandons expansion
                reason = exc.reason if isinstance(exc, ExpansionFailed) else type(exc).__name__
                recall_log.warning("event=recall.expansion.failed round=%d reason=%s", round, reason)
                for done in executed:
                    trace.record_round(done, "completed", retained=False)
                trace.record_round(round, "expansion_failed", retained=False)
                if trace.probe is not None and decided is not None:
                    trace.probe.abandon_since(decided)
                return 0
            executed.append(round)
        for done in executed:
            trace.record_round(done, "completed", retained=True)
        trace.omissions.update(pending)
        recall.groups = merged
        return executed[-1] if executed else 0

    def _merge(
        self,
        family: Family,
        current: ScopePools,
        found: ScopePools,
        omissions: Counter[tuple[Family, OmissionReason]],
        probe: ExplainProbe | None = None,
    ) -> ScopePools:
        """Earlier rounds first, then this round's new identities, up to the family's per-Scope ceiling."""
        new = dict(found)
        limit = self.limits[family]
        merged: ScopePools = []
        for scope_id, pool in current:
            pool = list(pool)
            seen = {c.key for c in pool}
            for candidate in new.get(scope_id, []):
                if candidate.key is None:
                    omissions[(family, "blank")] += 1
                elif candidate.key in seen:
                    omissions[(family, "duplicate")] += 1
                elif len(pool) >= limit:
                    omissions[(family, "family_limit")] += 1
                    if probe is not None:
                        probe.omitted(family, candidate.key, "family_limit")
                else:
                    seen.add(candidate.key)
                    pool.append(candidate)
            merged.append((scope_id, pool))
        return merged

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
            return serialize_valid_receipt(data, evidence)
        except ReceiptRejected as exc:
            reason, error_type = exc.reason, "ReceiptRejected"
        except ValidationError as exc:
            reason, error_type = rejection_for(exc).reason, "ValidationError"
        except Exception as exc:  # an assembler bug must never block injection
            reason, error_type = "assembly_failed", type(exc).__name__
        log.warning(
            "event=context.receipt.omitted reason=%s error_type=%s receipt_id=%s", reason, error_type, request_id
        )
        observe.note_receipt_omitted(reason, trace.active_span)
        return None
