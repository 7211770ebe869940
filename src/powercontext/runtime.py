"""The composition root: the one place that wires adapters, and the prepare path itself."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

from pydantic import ValidationError

from powercontext import __version__
from powercontext.assembly.builder import (
    Candidate,
    CodeCandidate,
    PreparedContextBuild,
    PreparedContextBuilder,
    Section,
)
from powercontext.code.indexer import CodeIndexer
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
from powercontext.domain.access import ScopeForbidden
from powercontext.domain.errors import RequestRefused
from powercontext.inference.config import EmbeddingConfig, build_embedding_provider
from powercontext.recall.family_readers import ExperienceReader, ProfileReader, TopicMemoryReader
from powercontext.recall.readers import (
    AtomicMemoryReader,
    CodeEvidenceReader,
    CodeReader,
    FamilyReader,
    RecallContext,
)
from powercontext.recall.trace import RecallTrace
from powercontext.receipt.assembler import ReceiptAssembler, ReceiptEvidence, TraceReceiptAssembler
from powercontext.receipt.validation import (
    ReceiptRejected,
    model_wire_data,
    rejection_for,
    serialize_valid_receipt,
)
from powercontext.search.channels import ChannelSearch, HybridWeights
from powercontext.search.code import CodeSearch
from powercontext.search.embedding import GuardedEmbedder, VectorChannel
from powercontext.search.families import ExperienceSearch
from powercontext.settings import Settings
from powercontext.store.base import (
    Embedding,
    FamilyStore,
    MemoryRecord,
    NewMemory,
    NewTopic,
    ScoredMemory,
    ScoredTopic,
    Store,
    TopicRecord,
)
from powercontext.store.code import CodeStore

log = logging.getLogger("powercontext.receipt")

ATOMIC_MEMORY: Family = "atomic-memory"
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
    ) -> None:
        self.store = store
        self.embedder = embedder or GuardedEmbedder(build_embedding_provider(EmbeddingConfig()))
        self.atomic_search: ChannelSearch[ScoredMemory] = ChannelSearch(
            store.search_text, store.search_vector, self.embedder, hybrid_weights
        )
        self.readers: dict[Family, FamilyReader] = {ATOMIC_MEMORY: AtomicMemoryReader(self.atomic_search)}
        self.topic_search: ChannelSearch[ScoredTopic] | None = None
        if isinstance(store, FamilyStore):  # a backend without these families leaves them reader-less
            self.topic_search = ChannelSearch(
                store.search_topics, store.search_topic_vector, self.embedder, hybrid_weights
            )
            self.readers["topic-memory"] = TopicMemoryReader(self.topic_search)
            self.readers["experience"] = ExperienceReader(ExperienceSearch(store))
            self.readers["profile"] = ProfileReader(store)
        self.code_reader: CodeReader | None = None
        self.code_search: CodeSearch | None = None
        if isinstance(store, CodeStore):
            self.code_search = CodeSearch(store, self.embedder, hybrid_weights)
            self.code_reader = CodeEvidenceReader(store, self.code_search)
        self.disabled_families = disabled_families
        self.builder = builder or PreparedContextBuilder()
        self.receipt_assembler = receipt_assembler or TraceReceiptAssembler()

    @classmethod
    def from_settings(cls, settings: Settings) -> Runtime:
        from powercontext.store.open import open_store

        provider = build_embedding_provider(settings.embeddings)
        preload = getattr(provider, "load", None)
        if callable(preload):  # the local model: load it now, not inside the first prepare (~0.4 s)
            preload()
        runtime = cls(
            open_store(settings.store_location()),
            embedder=GuardedEmbedder(provider, settings.embeddings_cooldown_s),
            hybrid_weights=HybridWeights(
                settings.hybrid_fts_weight, settings.hybrid_vector_weight, settings.hybrid_rrf_k
            ),
            disabled_families=settings.disabled_families,
        )
        runtime.report_vector_index()
        return runtime

    def close(self) -> None:
        self.store.close()
        self.embedder.provider.close()

    def report_vector_index(self) -> None:
        """Say at start-up, without content, when stored vectors do not match the configured model."""
        if not self.embedder.configured:
            return
        status = self.store.embedding_status(self.embedder.model_id)
        missing = status.active_heads - status.current_model
        if missing:
            logging.getLogger("powercontext.inference").warning(
                "event=embeddings.index.incomplete model=%s missing=%d other_model=%d"
                " action='run powercontext memory reindex'",
                self.embedder.model_id,
                missing - status.other_models,
                status.other_models,
            )

    # -- writes that carry embeddings --------------------------------------------------------------

    def create_memories(self, scope_id: str, items: list[NewMemory]) -> list[MemoryRecord]:
        if not self.embedder.configured:
            return self.store.create_memories(scope_id, items)
        self.store.get_scope(scope_id)  # a missing Scope is a 404 before any provider call
        embeddings = self.embedder.embed_for_write([item.text for item in items])
        with_vectors = [replace(item, embedding=e) for item, e in zip(items, embeddings, strict=True)]
        return self.store.create_memories(scope_id, with_vectors)

    def revise_memory(
        self,
        scope_id: str,
        artifact_id: str,
        expected_revision: int,
        text: str,
        kind: str | None,
        tags: list[str] | None,
    ) -> MemoryRecord:
        embedding = self._embedding_for(text)
        return self.store.revise_memory(scope_id, artifact_id, expected_revision, text, kind, tags, embedding)

    def merge_memories(
        self, scope_id: str, sources: list[tuple[str, int]], text: str, kind: str, tags: list[str]
    ) -> MemoryRecord:
        embedding = self._embedding_for(text)
        return self.store.merge_memories(scope_id, sources, text, kind, tags, embedding)

    def create_topic(self, store: FamilyStore, scope_id: str, item: NewTopic) -> TopicRecord:
        self.store.get_scope(scope_id)
        embedding = self._embedding_for(f"{item.title}\n\n{item.body}")
        return store.create_topic(scope_id, replace(item, embedding=embedding))

    def revise_topic(
        self,
        store: FamilyStore,
        scope_id: str,
        artifact_id: str,
        expected_revision: int,
        title: str | None,
        body: str | None,
        tags: list[str] | None,
    ) -> TopicRecord:
        embedding = None
        if self.embedder.configured:
            # The new revision's text decides its embedding; the store's compare-and-swap still guards
            # against a revision written between this read and the write.
            head = store.read_topic_head(scope_id, artifact_id)
            if head.head_revision == expected_revision:
                text = f"{head.title if title is None else title}\n\n{head.body if body is None else body}"
                embedding = self._embedding_for(text)
        return store.revise_topic(scope_id, artifact_id, expected_revision, title, body, tags, embedding)

    def code_indexer(self, store: CodeStore) -> CodeIndexer:
        """An indexer that stores each new chunk's embedding when a provider is configured."""
        return CodeIndexer(store, embed=self.embedder.embed_for_write if self.embedder.configured else None)

    def _embedding_for(self, text: str) -> Embedding | None:
        return self.embedder.embed_for_write([text])[0]

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
            limits=Limits(
                max_bytes_min=MIN_MAX_BYTES,
                max_bytes_max=MAX_MAX_BYTES,
                max_bytes_default=DEFAULT_MAX_BYTES,
                query_max_chars=MAX_QUERY_CHARS,
                body_max_bytes=MAX_BODY_BYTES,
                batch_max_items=MAX_BATCH_ITEMS,
            ),
        )

    def prepare(
        self, request: PrepareContextRequest, request_id: str, may_read: Callable[[str], bool] = lambda _: True
    ) -> PrepareResult:
        """The PreparedContext (and Receipt bytes when asked). ``may_read`` is the caller's read grant: the
        request Scope must pass it, and referenced Scopes that do not are not recalled."""
        if not may_read(request.scope_id):
            raise ScopeForbidden("read")
        plan = self.plan(request)
        trace = RecallTrace(requested_families=plan.families)
        with trace.stage("scope.context"):
            scope = self.store.get_scope(request.scope_id)
            scope_ids = (scope.scope_id, *(r for r in scope.context_references if may_read(r)))
        ctx = RecallContext(request.query, scope_ids, trace, VectorChannel(self.embedder))
        pools: dict[Family, list[Candidate]] = {}
        code: list[CodeCandidate] = []
        for family in plan.families:
            if family == "code":
                code = self._read_code(ctx)
                continue
            reader = self.readers.get(family)
            if reader is None:
                # Requested, but this Runtime has no reader for it: a skipped opportunity, not a search.
                trace.record_search(ctx.round, family, "none", "not_run", "none")
                pools[family] = []
                continue
            pools[family] = reader.read(ctx)
        trace.record_round(0, "completed", retained=True)
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
