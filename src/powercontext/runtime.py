"""The composition root: the one place that wires adapters (the prepare path itself is ``prepare.py``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from powercontext import __version__
from powercontext.assembly.builder import BuilderLimits, PreparedContextBuilder
from powercontext.assembly.render import date_precision
from powercontext.code.indexer import CodeIndexer
from powercontext.contract.capabilities import Capabilities, ExtractionCapability, Limits
from powercontext.contract.common import PREPARED_CONTEXT_SCHEMA, RECEIPT_POLICY_ID, Family
from powercontext.contract.explain import ContextExplanation, ExplainContextRequest
from powercontext.contract.limits import MAX_REQUEST_BODY_BYTES
from powercontext.contract.memory import MAX_BATCH_ITEMS, MAX_BODY_BYTES
from powercontext.contract.prepare import (
    DEFAULT_MAX_BYTES,
    MAX_MAX_BYTES,
    MAX_QUERY_CHARS,
    MIN_MAX_BYTES,
    PrepareContextRequest,
)
from powercontext.contract.receipt import MAX_RECEIPT_BYTES
from powercontext.contract.sources import MAX_SOURCE_BYTES
from powercontext.explain import ContextExplainer
from powercontext.inference.config import EmbeddingConfig, build_embedding_provider
from powercontext.inference.generation import GenerationProvider, NoGeneration
from powercontext.inference.generation_config import (
    DEFAULT_MAX_REQUESTS,
    InferenceSettings,
    ModelCallConfig,
    build_generation_provider,
)
from powercontext.jobs.background import BackgroundWork
from powercontext.jobs.extraction import ExtractionWorker
from powercontext.prepare import PreparePipeline, PrepareResult
from powercontext.prompts.resolver import prompt_capabilities, prompt_resolver_for
from powercontext.recall.budget import DEFAULT_PREPARE_DEADLINE_MS
from powercontext.recall.deterministic import LexicalCoverageReranker
from powercontext.recall.expansion import Expander, ModelExpander, WidenExpander
from powercontext.recall.family_readers import ExperienceReader, ProfileReader, TopicMemoryReader
from powercontext.recall.readers import AtomicMemoryReader, CodeEvidenceReader, CodeReader, FamilyReader
from powercontext.recall.rerank import ListwiseReranker, MemoryReranker, PromptResolver
from powercontext.recall.successor_probe import SuccessorProbe
from powercontext.receipt.assembler import ReceiptAssembler, TraceReceiptAssembler
from powercontext.search.backfill import VectorBackfill
from powercontext.search.channels import ChannelSearch, HybridWeights
from powercontext.search.code import CodeSearch
from powercontext.search.code_backfill import CodeVectorFill
from powercontext.search.embedding import GuardedEmbedder
from powercontext.search.families import ExperienceSearch, topic_text
from powercontext.search.relevance import RelevanceFloor
from powercontext.settings import Settings
from powercontext.sources.explicit import ExplicitExtractor
from powercontext.sources.model import ModelExtractor
from powercontext.store.base import (
    FamilyStore,
    MemoryRecord,
    ScoredMemory,
    ScoredTopic,
    Store,
)
from powercontext.store.code import CodeStore
from powercontext.store.source_records import SourceStore
from powercontext.writes.service import WriteService

ATOMIC_MEMORY: Family = "atomic-memory"
# The active memories a Source is extracted against: found by a search for its text (its first characters).
RELATED_POOL = 30
RELATED_QUERY_CHARS = 2000


class Runtime:
    def __init__(
        self,
        store: Store,
        *,
        embedder: GuardedEmbedder | None = None,
        hybrid_weights: HybridWeights | None = None,
        builder: PreparedContextBuilder | None = None,
        receipt_assembler: ReceiptAssembler | None = None,
        disabled_families: frozenset[str] = frozenset(),
        code_roots: tuple[Path, ...] = (),
        code_allow_hardlinks: bool = False,
        reranker: MemoryReranker | None = None,
        expander: Expander | None = None,
        resolve_prompt: PromptResolver | None = None,
        generation: GenerationProvider | None = None,
        prepare_deadline_s: float = DEFAULT_PREPARE_DEADLINE_MS / 1000,
        model_call_limit: int = DEFAULT_MAX_REQUESTS,
    ) -> None:
        """``code_roots``: the directories ``code_indexer`` may index (none by default); ``code_allow_hardlinks``
        lets indexing and exact reads accept files with more than one hard link. ``reranker`` and
        ``expander`` apply whatever the settings say (an injected reranker declares its own evidence);
        ``resolve_prompt`` is where Prompts come from (default: the store's Scope-owned Prompts);
        ``generation`` is closed with the Runtime. ``receipt_assembler`` replaces the built-in one (its
        Receipts are validated against what the prepare recorded). ``prepare_deadline_s`` bounds one prepare's
        provider calls together, ``model_call_limit`` its expansion and rerank model calls together."""
        self.store = store
        self.code_roots = code_roots
        self.code_allow_hardlinks = code_allow_hardlinks
        self.generation = generation or NoGeneration()
        self.embedder = embedder or GuardedEmbedder(build_embedding_provider(EmbeddingConfig()))
        self.vector_backfill, self.background = self._background_work()
        self.atomic_search: ChannelSearch[ScoredMemory] = ChannelSearch(
            store.search_text,
            store.search_vector,
            self.embedder,
            hybrid_weights,
            floor=RelevanceFloor(store.term_statistics),
            vectors_complete=self.vector_backfill.complete,
            hit_vectors=store.memory_vectors,
        )
        self.readers: dict[Family, FamilyReader] = {ATOMIC_MEMORY: self._atomic_reader()}
        self.topic_search = self._add_family_readers(hybrid_weights)
        self.writes = self._write_service()
        self.code_search, self.code_reader = self._code_reading(hybrid_weights)
        self.disabled_families = disabled_families
        self.pipeline = PreparePipeline(
            store,
            self.embedder,
            self.readers,
            self.code_reader,
            builder or PreparedContextBuilder(),
            receipt_assembler or TraceReceiptAssembler(),
            disabled_families,
            reranker=reranker,
            expander=expander,
            resolve_prompt=resolve_prompt or prompt_resolver_for(store),
            deadline_s=prepare_deadline_s,
            model_call_limit=model_call_limit,
        )

    def _atomic_reader(self) -> AtomicMemoryReader:
        store = self.store
        probe = SuccessorProbe(store.memories_holding, store.term_statistics)
        return AtomicMemoryReader(self.atomic_search, stored_vectors=store.memory_vectors, successor_probe=probe)

    def _add_family_readers(self, hybrid_weights: HybridWeights | None) -> ChannelSearch[ScoredTopic] | None:
        """Readers of the Topic Memory, Experience and Profile families; the Topic Memory search, if any."""
        store = self.store
        if not isinstance(store, FamilyStore):  # a backend without these families leaves them reader-less
            return None
        topic_search = ChannelSearch(
            store.search_topics,
            store.search_topic_vector,
            self.embedder,
            hybrid_weights,
            floor=RelevanceFloor(store.topic_term_statistics, text_of=topic_text),
            vectors_complete=self.vector_backfill.complete,
        )
        self.readers["topic-memory"] = TopicMemoryReader(topic_search)
        self.readers["experience"] = ExperienceReader(ExperienceSearch(store))
        self.readers["profile"] = ProfileReader(store)
        return topic_search

    def _code_reading(self, hybrid_weights: HybridWeights | None) -> tuple[CodeSearch | None, CodeReader | None]:
        """The code search and the code evidence reader, when the store holds code."""
        if not isinstance(self.store, CodeStore):
            return None, None
        complete = self.code_vectors.complete if self.code_vectors is not None else None
        code_search = CodeSearch(self.store, self.embedder, hybrid_weights, complete)
        return code_search, CodeEvidenceReader(self.store, code_search)

    @classmethod
    def from_settings(cls, settings: Settings) -> Runtime:
        from powercontext.store.open import open_store

        # The local model is loaded by the Server's background backfill (``start_background``), or on first use.
        provider = build_embedding_provider(settings.embeddings)
        inference = settings.inference
        generation = build_generation_provider(inference.generation)
        store = open_store(settings.store_location())
        resolve_prompt = prompt_resolver_for(store)
        runtime = cls(
            store,
            embedder=GuardedEmbedder(provider, settings.embeddings_cooldown_s),
            hybrid_weights=HybridWeights(
                settings.hybrid_fts_weight,
                settings.hybrid_vector_weight,
                settings.hybrid_rrf_k,
                "rrf" if settings.hybrid_fusion == "rrf" else "score",
            ),
            builder=PreparedContextBuilder(BuilderLimits(dates=date_precision(settings.context_dates))),
            disabled_families=settings.disabled_families,
            code_roots=settings.code_roots,
            code_allow_hardlinks=settings.code_allow_hardlinks,
            reranker=build_reranker(inference, generation),
            expander=build_expander(inference, generation, resolve_prompt),
            resolve_prompt=resolve_prompt,
            generation=generation,
            prepare_deadline_s=settings.prepare_deadline_ms / 1000,
            model_call_limit=inference.generation.max_requests,
        )
        runtime.report_vector_index()
        if runtime.extraction is not None:
            runtime.extraction.lease_s = settings.extraction_lease_s
            runtime.extraction.review = settings.extraction_review
        if generation.configured:
            runtime.extract_with_model(inference.expansion_call())
        return runtime

    def _background_work(self) -> tuple[VectorBackfill, BackgroundWork]:
        """The vector backfill, and the jobs a Server runs beside its requests (with a provider, that backfill).
        Started by the Server (``start_background``); until then every Scope counts as complete."""
        backfill = VectorBackfill(self.store, self.embedder)
        work = BackgroundWork()
        self.code_vectors: CodeVectorFill | None = None
        if self.embedder.configured:
            work.register("embeddings", backfill)
            if isinstance(self.store, CodeStore):
                self.code_vectors = CodeVectorFill(self.store, self.embedder)
                work.register("code-embeddings", self.code_vectors)
        return backfill, work

    def _write_service(self) -> WriteService:
        """The write service, and (when the store holds Sources) its extraction worker among the jobs."""
        writes = WriteService(self.store, self.embedder, self.atomic_search)
        self.extraction: ExtractionWorker | None = None
        if isinstance(self.store, SourceStore):
            self.extraction = ExtractionWorker(writes, self.store, ExplicitExtractor())
            self.background.register("extraction", self.extraction)
        return writes

    def extract_with_model(self, call: ModelCallConfig) -> None:
        """Extract Sources with the generation model (``sources.model``) instead of explicit statements only;
        before ``start_background``."""
        if self.extraction is None:
            return
        resolve = self.pipeline.resolve_prompt

        def related(scope_id: str, text: str) -> list[MemoryRecord]:
            # The relevance floor is for what a prompt is shown; what a Source may revise includes what it drops.
            found = self.atomic_search.search(scope_id, text[:RELATED_QUERY_CHARS], "auto", RELATED_POOL)
            return [hit.record for hit in (*found.hits, *found.below_floor)][:RELATED_POOL]

        self.extraction.extractor = ModelExtractor(self.generation, call, resolve, related)

    def start_background(self) -> None:
        """What a Server starts beside its requests (``jobs.background``): with a provider, loading the model and
        embedding what the store holds without a vector (``search/backfill.py``); ``auto`` searches full text
        until that is done."""
        self.background.start()

    def close(self) -> None:
        """Drain the background work, then close the store and the providers."""
        self.background.drain()
        self.store.close()
        self.embedder.provider.close()
        self.generation.close()

    def report_vector_index(self) -> None:
        """Say at start-up, without content, when stored vectors do not match the configured model."""
        if not self.embedder.configured:
            return
        status = self.store.embedding_status(self.embedder.model_id)
        missing = status.active_heads - status.current_model
        if missing:
            logging.getLogger("powercontext.inference").warning(
                "event=embeddings.index.incomplete model=%s missing=%d other_model=%d"
                " action='a Server embeds them in the background; or run powercontext memory reindex'",
                self.embedder.model_id,
                missing - status.other_models,
                status.other_models,
            )

    def code_indexer(self, store: CodeStore) -> CodeIndexer:
        """An indexer confined to ``code_roots``. With a provider, new chunks get their vectors from the Server's
        background fill (``search/code_backfill.py``) once it runs, else in the indexing call itself."""
        fill = self.code_vectors if self.code_vectors is not None and self.code_vectors.running else None
        embed = self.embedder.embed_for_write if self.embedder.configured and fill is None else None
        return CodeIndexer(
            store,
            embed=embed,
            roots=self.code_roots,
            allow_hardlinks=self.code_allow_hardlinks,
            indexed=fill.notify if fill is not None else None,
        )

    def capabilities(self) -> Capabilities:
        return Capabilities(
            version=__version__,
            context_versions=[PREPARED_CONTEXT_SCHEMA],
            receipt_policies=[RECEIPT_POLICY_ID],
            families=[
                f for f in (*self.readers, *(["code"] if self.code_reader else [])) if f not in self.disabled_families
            ],
            search_modes=list(self.atomic_search.available_modes),
            embedding_model=self.embedder.model_id if self.embedder.configured else None,
            rerank=self.rerank_policy(),
            expansion=self.expansion_policy(),
            prompts=prompt_capabilities(self.store),
            extraction=self._extraction_capability(),
            limits=Limits(
                max_bytes_min=MIN_MAX_BYTES,
                max_bytes_max=MAX_MAX_BYTES,
                max_bytes_default=DEFAULT_MAX_BYTES,
                query_max_chars=MAX_QUERY_CHARS,
                body_max_bytes=MAX_BODY_BYTES,
                batch_max_items=MAX_BATCH_ITEMS,
                request_max_bytes=MAX_REQUEST_BODY_BYTES,
                receipt_max_bytes=MAX_RECEIPT_BYTES,
            ),
        )

    def _extraction_capability(self) -> ExtractionCapability | None:
        if self.extraction is None or not isinstance(self.store, SourceStore):
            return None
        extractor: Literal["explicit", "model"] = "model" if self.extraction.extractor.model_backed else "explicit"
        pending = sum(self.store.pending_sources().values())
        return ExtractionCapability(extractor=extractor, pending_sources=pending, source_max_bytes=MAX_SOURCE_BYTES)

    def rerank_policy(self) -> Literal["off", "listwise", "deterministic"]:
        """The rerank this Runtime applies; an injected reranker counts by what it declares."""
        reranker = self.pipeline.reranker
        if reranker is None:
            return "off"
        return "listwise" if reranker.model_backed else "deterministic"

    def expansion_policy(self) -> Literal["none", "widen", "model"]:
        expander = self.pipeline.expander
        if expander is None:
            return "none"
        return "widen" if isinstance(expander, WidenExpander) else "model"

    def prepare(
        self, request: PrepareContextRequest, request_id: str, may_read: Callable[[str], bool] = lambda _: True
    ) -> PrepareResult:
        """The PreparedContext (and Receipt bytes when asked); see ``PreparePipeline.prepare``."""
        return self.pipeline.prepare(request, request_id, may_read)

    def explain(
        self, request: ExplainContextRequest, request_id: str, may_read: Callable[[str], bool] = lambda _: True
    ) -> ContextExplanation:
        """One prepare with its per-candidate evidence (diagnostic; see ``explain.ContextExplainer``)."""
        return ContextExplainer(self.pipeline).explain(request, request_id, may_read)


def build_reranker(inference: InferenceSettings, generation: GenerationProvider) -> MemoryReranker | None:
    """The reranker ``POWERCONTEXT_RERANK`` names (its settings already validated), or None when off."""
    mode = inference.rerank.mode
    if mode == "listwise":
        return ListwiseReranker(generation, inference.rerank_call())
    if mode == "deterministic":
        settings = inference.rerank.settings
        return LexicalCoverageReranker(
            candidate_limit=int(settings.get("candidate_limit", 30)),
            coverage_weight=float(settings.get("coverage_weight", LexicalCoverageReranker.default_weight)),
        )
    return None


def build_expander(
    inference: InferenceSettings, generation: GenerationProvider, resolve_prompt: PromptResolver
) -> Expander | None:
    if inference.expansion == "widen":
        return WidenExpander()
    if inference.expansion == "model":
        return ModelExpander(generation, inference.expansion_call(), resolve_prompt)
    return None
