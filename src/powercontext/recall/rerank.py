"""Rerank of each Scope's coarse Atomic Memory pool, and the evidence each invocation leaves on the trace.

A reranker sees one Scope's pool (up to its ``candidate_limit``, coarse order) and answers which candidates
to keep, best first. Outcomes: ``selected`` (``none``); ``fallback`` (``empty_selection``: a valid answer that
chose nothing usable); ``failed`` (``inference_unavailable``, ``inference_timeout``, ``invalid_output``). On a
fallback or a failure the coarse order is kept, so the prepare always answers.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from powercontext import observe
from powercontext.domain.candidates import Candidate
from powercontext.inference.errors import InferenceError
from powercontext.inference.generation import (
    ChatMessage,
    GenerationProvider,
    InvalidOutput,
    json_answer,
)
from powercontext.inference.generation_config import ModelCallConfig
from powercontext.prompts.definitions import MEMORY_RERANK, ResolvedPrompt
from powercontext.prompts.errors import PromptUnavailable
from powercontext.recall.budget import PrepareBudget
from powercontext.recall.rerank_record import RerankConfigRecord as RerankConfigRecord  # re-exported for rerankers
from powercontext.recall.trace import RecallTrace

log = logging.getLogger("powercontext.recall")

RerankOutcome = Literal["selected", "fallback", "failed"]
RerankReason = Literal["none", "empty_selection", "inference_unavailable", "inference_timeout", "invalid_output"]
PromptResolver = Callable[[str, str], ResolvedPrompt]
LISTWISE_POLICY_ID = "powercontext.memory.rerank.listwise.v1"
MAX_CANDIDATE_CHARS = 2000  # per candidate in the rerank message; memories are short, this only bounds outliers


@dataclass(frozen=True, slots=True)
class RerankTask:
    """One Scope's rerank invocation: the request, its coarse pool, how many to keep, and the Scope's resolved
    Prompt (None for a reranker that takes none)."""

    query: str
    candidates: Sequence[Candidate]
    limit: int
    prompt: ResolvedPrompt | None


@dataclass(frozen=True)
class RerankResult:
    order: tuple[int, ...] | None  # indexes into the pool, best first; None: keep the coarse order
    outcome: RerankOutcome
    reason: RerankReason


class RerankSession:
    """One prepare's rerank budget: at most ``max_requests`` model calls and the prepare's shared ``budget``
    (its deadline, and the model calls expansion and rerank make together), and no further call after the
    provider failed (instead of paying another timeout).

    A Scope the session does not allow is not invoked at all: it has no rerank group and keeps its coarse order.
    """

    def __init__(self, max_requests: int, budget: PrepareBudget | None = None) -> None:
        self.remaining = max_requests
        self.failure: RerankReason | None = None
        self.budget = budget or PrepareBudget.unbounded()

    def refusal(self) -> str | None:
        """Why a model-backed rerank may not be invoked now (``provider_failed``, ``deadline`` or
        ``max_requests``), or None when it may; nothing is counted."""
        if self.failure is not None:
            return "provider_failed"
        if not self.budget.can_start():
            return "deadline"
        if self.remaining <= 0 or self.budget.model_calls_left <= 0:
            return "max_requests"
        return None

    def take(self) -> bool:
        """Count one model call against both limits; False (nothing counted) when either is reached."""
        if self.remaining <= 0 or not self.budget.take_model_call():
            return False
        self.remaining -= 1
        return True


class MemoryReranker(Protocol):
    """The rerank seam. An injected reranker declares ``model_backed`` and supplies its evidence; evidence that
    is missing or incomplete drops the Receipt (never the rerank, never the answer)."""

    model_backed: bool
    prompt_key: str | None  # the Prompt it is invoked with, resolved per Scope; None: it takes no Prompt
    candidate_limit: int
    max_requests: int

    def evidence(self, prompt: ResolvedPrompt | None) -> RerankConfigRecord | None: ...

    def rerank(self, task: RerankTask, session: RerankSession) -> RerankResult: ...


class ListwiseReranker:
    """Asks the rerank model to rank a Scope's pool, with that Scope's resolved ``memory.rerank`` Prompt."""

    model_backed = True
    prompt_key: str | None = MEMORY_RERANK

    def __init__(self, provider: GenerationProvider, call: ModelCallConfig) -> None:
        self._provider = provider
        self._call = call
        self.candidate_limit = int(call.settings.get("candidate_limit", 30))
        self.max_requests = call.max_requests

    def evidence(self, prompt: ResolvedPrompt | None) -> RerankConfigRecord | None:
        call = self._call
        return RerankConfigRecord(
            LISTWISE_POLICY_ID, call.model_id, call.settings, call.timeout_s, call.max_requests, prompt, True
        )

    def rerank(self, task: RerankTask, session: RerankSession) -> RerankResult:
        if task.prompt is None:
            return RerankResult(None, "failed", "inference_unavailable")
        request = rerank_message(task.query, task.candidates)
        messages = [ChatMessage("system", task.prompt.compiled_text), ChatMessage("user", request)]
        try:
            answer = self._provider.complete(self._call.model, messages, self._call.settings, self._call.timeout_s)
            order = parse_ranks(answer, len(task.candidates), task.limit)
        except InferenceError as exc:
            session.failure = exc.reason
            log.warning("event=rerank.failed reason=%s", exc.reason)
            return RerankResult(None, "failed", exc.reason)
        except InvalidOutput:
            log.warning("event=rerank.failed reason=invalid_output")
            return RerankResult(None, "failed", "invalid_output")
        if not order:
            return RerankResult(None, "fallback", "empty_selection")
        return RerankResult(tuple(order), "selected", "none")


def rerank_message(query: str, candidates: Sequence[Candidate]) -> str:
    """The request and the numbered candidates; one line each, so the numbering cannot be forged by a body."""
    lines = [f"Request:\n{' '.join(query.split())}", "", "Candidates:"]
    for number, candidate in enumerate(candidates, start=1):
        text = " ".join(candidate.text.split())[:MAX_CANDIDATE_CHARS]
        lines.append(f"[{number}] {text}")
    return "\n".join(lines)


def parse_ranks(answer: str, count: int, limit: int) -> list[int]:
    """0-based indexes from ``{"ranks": [n, ...]}`` (1-based numbers): the first in-range occurrence of
    each, duplicates and out-of-range numbers dropped, at most ``limit``. ``InvalidOutput`` when the
    answer is not that object of whole numbers."""
    payload = json_answer(answer, "rerank")
    ranks = payload.get("ranks") if isinstance(payload, dict) else None
    if not isinstance(ranks, list) or not all(isinstance(r, int) and not isinstance(r, bool) for r in ranks):
        raise InvalidOutput("the rerank answer has no list of whole numbers in 'ranks'")
    order: list[int] = []
    for rank in ranks:
        if 1 <= rank <= count and rank - 1 not in order:
            order.append(rank - 1)
            if len(order) == limit:
                break
    return order


def rerank_scopes(
    reranker: MemoryReranker,
    resolve_prompt: PromptResolver,
    query: str,
    pools: Sequence[tuple[str, list[Candidate]]],
    limit: int,
    round: int,
    trace: RecallTrace,
) -> list[list[Candidate]]:
    """Each Scope's pool reranked (or kept in coarse order), cut to ``limit``, with the evidence recorded.

    Candidates the reranker left out are ``rerank_not_selected``; on a fallback or failure the coarse tail
    beyond ``limit`` is ``family_limit``, as it would be without a reranker. An empty pool invokes nothing, and
    neither does a Scope a model-backed reranker's session refuses (its request limit or the prepare's is
    reached, the deadline leaves no time, or the provider already failed in this prepare): such a Scope has no
    rerank group (the RFC: no invocation, no group) and is counted as an unreranked pool.
    """
    session = RerankSession(reranker.max_requests, trace.budget)
    kept_pools: list[list[Candidate]] = []
    outcomes: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    for scope_id, pool in pools:
        refusal = session.refusal() if pool and reranker.model_backed else None
        if not pool or refusal is not None:
            if refusal is not None:
                skipped[refusal] += 1
            kept_pools.append(_coarse(pool, limit, trace))
            continue
        outcome, kept = _rerank_pool(reranker, resolve_prompt, query, scope_id, pool, limit, round, trace, session)
        outcomes[outcome] += 1
        kept_pools.append(kept)
    for reason, count in skipped.items():  # content-free: how many Scopes went unreranked, and why
        log.warning("event=rerank.skipped reason=%s scopes=%d", reason, count)
    outcomes["skipped"] = sum(skipped.values())
    observe.note_rerank(
        +outcomes,
        sum(len(pool) for _, pool in pools),
        sum(len(kept) for kept in kept_pools),
        trace.active_span,
    )
    return kept_pools


def _rerank_pool(
    reranker: MemoryReranker,
    resolve_prompt: PromptResolver,
    query: str,
    scope_id: str,
    pool: list[Candidate],
    limit: int,
    round: int,
    trace: RecallTrace,
    session: RerankSession,
) -> tuple[str, list[Candidate]]:
    """One Scope's rerank invocation: its outcome and the candidates kept."""
    prompt: ResolvedPrompt | None = None
    if reranker.prompt_key is not None:
        try:  # once per Scope, before the model call, frozen for the invocation
            prompt = resolve_prompt(scope_id, reranker.prompt_key)
        except Exception as exc:  # PromptUnavailable, or a resolver that broke: the same for this rerank
            # The Scope's own Prompt cannot be honoured: no rerank with another one. No config can be
            # stated for an invocation that never got its Prompt, so the Receipt is dropped.
            error_type = "PromptUnavailable" if isinstance(exc, PromptUnavailable) else type(exc).__name__
            key = reranker.prompt_key
            log.warning("event=rerank.failed reason=prompt_unavailable key=%s error_type=%s", key, error_type)
            trace.evidence_gap = "prompt_unavailable"
            return "failed", _coarse(pool, limit, trace)
    if reranker.model_backed:
        session.take()  # refusal() said there is room: this invocation counts against both limits
        trace.non_deterministic = True  # even if it fails: a model was asked
    # The reranker sees at most its candidate_limit of the coarse pool (the pool is at least 16 deep, so a
    # smaller limit cuts it here); the coarse tail it never saw is family_limit, as without a reranker.
    offered = pool[: max(1, reranker.candidate_limit)]
    try:
        result = reranker.rerank(RerankTask(query, offered, limit, prompt), session)
        record = reranker.evidence(prompt)
    except Exception as exc:  # an injected reranker's bug: the coarse order, and no evidence to state
        log.warning("event=rerank.failed reason=reranker_error error_type=%s", type(exc).__name__)
        trace.evidence_gap = "missing_evidence"
        return "failed", _coarse(pool, limit, trace)
    if record is None or not record.is_complete() or record.model_backed != reranker.model_backed:
        trace.evidence_gap = "missing_evidence"
    else:
        trace.record_rerank(round, record, result.outcome, result.reason)
    if result.order is None:
        return result.outcome, _coarse(pool, limit, trace)
    chosen = [offered[i] for i in result.order[:limit]]
    trace.omit("atomic-memory", "rerank_not_selected", len(offered) - len(chosen))
    trace.omit("atomic-memory", "family_limit", len(pool) - len(offered))
    if trace.probe is not None:
        kept = {c.key for c in chosen}
        for dropped in offered:
            if dropped.key not in kept:
                trace.probe.omitted("atomic-memory", dropped.key, "rerank_not_selected")
        for dropped in pool[len(offered) :]:
            trace.probe.omitted("atomic-memory", dropped.key, "family_limit")
    return result.outcome, chosen


def _coarse(pool: list[Candidate], limit: int, trace: RecallTrace) -> list[Candidate]:
    trace.omit("atomic-memory", "family_limit", max(0, len(pool) - limit))
    if trace.probe is not None:
        for dropped in pool[limit:]:
            trace.probe.omitted("atomic-memory", dropped.key, "family_limit")
    return pool[:limit]


def will_invoke(reranker: MemoryReranker, pools: Sequence[tuple[str, list[Candidate]]], budget: PrepareBudget) -> bool:
    """Whether ``rerank_scopes`` would invoke ``reranker`` at all (then it is a stage of this prepare).

    A session only ever refuses more as a prepare goes on, so the first non-empty pool decides.
    """
    if not any(pool for _, pool in pools):
        return False
    return not reranker.model_backed or RerankSession(reranker.max_requests, budget).refusal() is None
