"""One evaluation run: ingest a suite into fresh Scopes, prepare once per query, search the pool, score.

The runner talks to a Server through ``PowerContextClient``; the CLI hands it either a client over HTTP
(``--url``) or one bound in-process to a Server on a fresh temporary store. Every number in the report
comes from what the Server answered.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from powercontext.client import PowerContextClient
from powercontext.contract.common import SearchModePolicy
from powercontext.contract.memory import AtomicMemoryCreate
from powercontext.contract.prepare import PrepareContextRequest, PreparedContext
from powercontext.contract.receipt import PreparedContextReceipt, SelectedArtifact
from powercontext.evaluation.join import join_misses
from powercontext.evaluation.metrics import (
    first_rank,
    hit_at,
    ndcg_at,
    outdated_instead,
    outdated_over_current,
    recall_at,
    reciprocal_rank,
)
from powercontext.evaluation.suite import ABSTAIN, Suite, SuiteQuery, create_body

BATCH = 500
DEFAULT_K = 8
DEFAULT_POOL_DEPTH = 16  # the prepare path's Atomic Memory candidates per Scope
DEEP_DEPTH = 50  # the search route's largest limit
MAX_QUERY_TEXT = 300  # characters of a query kept in the report, for reading the worst queries
Mode = Literal["auto", "fts", "hybrid"]


class Progress(Protocol):
    def start(self, phase: str, total: int) -> None: ...
    def advance(self) -> None: ...


class _Silent:
    def start(self, phase: str, total: int) -> None:
        pass

    def advance(self) -> None:
        pass


@dataclass(frozen=True)
class RunSettings:
    """Everything that decides a run's numbers, recorded in the report so it can be repeated."""

    mode: Mode = "auto"
    max_bytes: int = 8000
    sections: tuple[tuple[str, int], ...] = ()  # explicit assembly (family, limit); () = default recall
    k: int = DEFAULT_K
    pool_depth: int = DEFAULT_POOL_DEPTH
    deep_depth: int = DEEP_DEPTH
    scope_prefix: str = ""  # prepended to each suite Scope id (fresh Scopes on a shared Server)

    def command(self, suite_dir: str, url: str | None) -> list[str]:
        """The ``powercontext eval run`` arguments that repeat this run (add the recorded environment)."""
        args = ["powercontext", "eval", "run", suite_dir, "--out", "OUT", "--mode", self.mode]
        args += ["--max-bytes", str(self.max_bytes), "--k", str(self.k)]
        for family, limit in self.sections:
            args += ["--section", f"{family}={limit}"]
        if url is not None:
            args += ["--url", url]
        return args

    def to_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "max_bytes": self.max_bytes,
            "sections": [{"family": f, "limit": n} for f, n in self.sections],
            "k": self.k,
            "pool_depth": self.pool_depth,
            "deep_depth": self.deep_depth,
            "scope_prefix": self.scope_prefix,
        }

    @property
    def memory_cap(self) -> int:
        """How many Atomic Memories the Builder may inject: the memory section's limit, or the entry limit."""
        if not self.sections:
            return DEFAULT_K
        return next((n for f, n in self.sections if f == "memory"), 0)


class EvalRunError(Exception):
    """A run that cannot give honest numbers (e.g. ``--mode hybrid`` on a Server without vectors)."""


@dataclass
class QueryResult:
    query: SuiteQuery
    selected: list[str]  # suite ids of the injected Atomic Memories, in injection order
    other_selected: int  # injected items that are not suite memories (other families, code)
    content_bytes: int
    latency_ms: float
    receipt: PreparedContextReceipt | None
    pool: list[str]
    deep: list[str]
    search_mode: str
    metrics: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        q = self.query
        text = q.query if len(q.query) <= MAX_QUERY_TEXT else q.query[: MAX_QUERY_TEXT - 1] + "…"
        receipt = self.receipt
        return {
            "id": q.id,
            "scope_id": q.scope_id,
            "category": q.category,
            "query": text,
            "expected": list(q.expected),
            "outdated": list(q.outdated),
            "selected": self.selected,
            "other_selected": self.other_selected,
            "content_bytes": self.content_bytes,
            "latency_ms": round(self.latency_ms, 3),
            "search_mode": self.search_mode,
            "pool": self.pool,
            "deep_ranks": {m: self.deep.index(m) + 1 for m in (*q.expected, *q.outdated) if m in self.deep},
            "receipt": None if receipt is None else _receipt_summary(receipt),
            **self.metrics,
        }


def _receipt_summary(receipt: PreparedContextReceipt) -> dict[str, Any]:
    """The Receipt's retrieval evidence and omission groups (all content-free)."""
    retrieval = receipt.retrieval
    return {
        "used_bytes": receipt.used_bytes,
        "truncated": receipt.truncated,
        "rounds": [r.model_dump(mode="json") for r in retrieval.rounds],
        "searches": [s.model_dump(mode="json") for s in retrieval.searches],
        "reranks": [r.model_dump(mode="json") for r in retrieval.reranks],
        "omitted": [o.model_dump(mode="json") for o in receipt.omitted],
    }


def _search_mode(receipt: PreparedContextReceipt | None, requested: Mode) -> SearchModePolicy:
    """The mode round 0 actually ran for Atomic Memory (so the pool re-read is the same search)."""
    if receipt is not None:
        for group in receipt.retrieval.searches:
            if group.round == 0 and group.family == "atomic-memory" and group.mode in ("fts", "vector", "hybrid"):
                mode: SearchModePolicy = group.mode
                return mode
    return "auto" if requested == "auto" else requested


def score(result: QueryResult, settings: RunSettings) -> None:
    """Fill ``result.metrics``: ranking metrics, the outdated checks, and the join of misses."""
    q, selected, k = result.query, result.selected, settings.k
    metrics: dict[str, Any] = {}
    if q.category != ABSTAIN and q.expected:
        metrics.update(
            hit_at_1=hit_at(selected, q.expected, 1),
            hit_at_3=hit_at(selected, q.expected, 3),
            hit_at_k=hit_at(selected, q.expected, k),
            recall_at_k=recall_at(selected, q.expected, k),
            all_at_k=recall_at(selected, q.expected, k) == 1.0,
            reciprocal_rank=reciprocal_rank(selected, q.expected),
            ndcg_at_k=ndcg_at(selected, q.expected, k),
            first_rank=first_rank(selected, q.expected),
        )
    if q.outdated:
        metrics.update(
            outdated_injected=any(m in selected for m in q.outdated),
            outdated_instead=outdated_instead(selected, q.expected, q.outdated),
            outdated_over_current=outdated_over_current(selected, q.expected, q.outdated),
        )
    omitted: dict[str, int] = {}
    if result.receipt is not None:
        for group in result.receipt.omitted:
            if group.family == "atomic-memory":
                omitted[group.reason] = omitted.get(group.reason, 0) + group.count
    joined = join_misses(q.expected, selected, result.pool, result.deep, omitted, settings.memory_cap)
    metrics["misses"] = [
        {"id": m.memory_id, "reason": m.reason, "pool_rank": m.pool_rank, "deep_rank": m.deep_rank}
        for m in joined.misses
    ]
    metrics["join_exact"] = joined.exact and result.receipt is not None
    result.metrics = metrics


@dataclass
class RunOutput:
    results: list[QueryResult]
    ingest_seconds: float
    memories: int
    capabilities: dict[str, Any]


async def run_suite(
    client: PowerContextClient,
    suite: Suite,
    settings: RunSettings,
    progress: Progress | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> RunOutput:
    """Ingest ``suite`` into fresh Scopes, then prepare and score every query, in file order."""
    progress = progress or _Silent()
    capabilities = (await client.capabilities()).model_dump(mode="json")
    modes = set(capabilities.get("search_modes", []))
    if settings.mode == "hybrid" and "hybrid" not in modes:
        raise EvalRunError(
            "--mode hybrid needs a Server with an embedding provider (POWERCONTEXT_EMBEDDINGS); "
            f"this one offers {', '.join(sorted(modes))}"
        )
    if settings.mode == "fts" and "hybrid" in modes:
        raise EvalRunError(
            "--mode fts: this Server has an embedding provider and prepare would run hybrid; "
            "run it without POWERCONTEXT_EMBEDDINGS, or evaluate in-process"
        )
    by_artifact, ingest_seconds = await _ingest(client, suite, settings, progress, clock)
    progress.start("queries", len(suite.queries))
    results = []
    for query in suite.queries:
        result = await _run_query(client, query, settings, by_artifact, clock)
        score(result, settings)
        results.append(result)
        progress.advance()
    return RunOutput(results, ingest_seconds, len(suite.memories), capabilities)


async def _ingest(
    client: PowerContextClient, suite: Suite, settings: RunSettings, progress: Progress, clock: Callable[[], float]
) -> tuple[dict[str, str], float]:
    """Create each suite Scope and its memories (oldest first); answers artifact id → suite id, and seconds."""
    progress.start("ingest", len(suite.memories))
    ids: dict[str, str] = {}
    start = clock()
    for scope_id in suite.scope_ids:
        target = settings.scope_prefix + scope_id
        await client.create_scope(target, f"evaluation: {scope_id}")
        memories = suite.memories_in_ingest_order(scope_id)
        for offset in range(0, len(memories), BATCH):
            chunk = memories[offset : offset + BATCH]
            # The suite's ``created`` is when each memory was true: ingested as ``observed_at``, so the store's
            # dates (and the ranking's newer-first rule) follow the suite's history, not the ingestion clock.
            items = [AtomicMemoryCreate.model_validate(create_body(m)) for m in chunk]
            created = await client.add_memories(target, items)
            for memory, record in zip(chunk, created, strict=True):
                # Artifact ids are random 128-bit values, unique across Scopes.
                ids[record.artifact_address.artifact.artifact_id] = memory.id
                progress.advance()
    return ids, clock() - start


async def _run_query(
    client: PowerContextClient,
    query: SuiteQuery,
    settings: RunSettings,
    by_artifact: dict[str, str],
    clock: Callable[[], float],
) -> QueryResult:
    scope_id = settings.scope_prefix + query.scope_id
    fields: dict[str, Any] = {
        "scope_id": scope_id,
        "query": query.query,
        "max_bytes": settings.max_bytes,
        "include_receipt": True,
    }
    if settings.sections:
        fields["assembly"] = {"sections": [{"family": f, "limit": n} for f, n in settings.sections]}
    request = PrepareContextRequest.model_validate(fields)
    start = clock()
    prepared: PreparedContext = await client.prepare_context(request)
    latency_ms = (clock() - start) * 1000.0
    receipt = prepared.receipt
    selected: list[str] = []
    other = 0
    for item in receipt.selected if receipt is not None else []:
        address = item.artifact_address if isinstance(item, SelectedArtifact) else None
        if address is not None and address.scope_id == scope_id and item.family == "atomic-memory":
            memory = by_artifact.get(address.artifact.artifact_id)
            if memory is not None:
                selected.append(memory)
                continue
        other += 1
    mode = _search_mode(receipt, settings.mode)
    pool = await _search(client, scope_id, query.query, mode, settings.pool_depth, by_artifact)
    deep = await _search(client, scope_id, query.query, mode, settings.deep_depth, by_artifact)
    return QueryResult(query, selected, other, prepared.content_bytes, latency_ms, receipt, pool, deep, mode)


async def _search(
    client: PowerContextClient, scope_id: str, query: str, mode: SearchModePolicy, limit: int, ids: dict[str, str]
) -> list[str]:
    found = await client.search_memory(scope_id, query, mode, limit)
    return [ids.get(h.artifact_address.artifact.artifact_id, "?") for h in found.hits]


def gather_modes(results: Sequence[QueryResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.search_mode] = counts.get(r.search_mode, 0) + 1
    return counts
