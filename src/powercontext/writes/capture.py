"""The Source part of ``WriteService``: capture (redacted before it is stored) and applying extracted operations."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import replace

from powercontext.search.embedding import GuardedEmbedder
from powercontext.store.base import Embedding, Store
from powercontext.store.errors import FamilyUnsupported
from powercontext.store.source_records import (
    WRITES_TEXT,
    ClaimedSource,
    ExtractionPolicy,
    ExtractionStatus,
    MemoryCandidate,
    NewSource,
    SourceKind,
    SourceOperation,
    SourceOrigin,
    SourceRecord,
    SourceStore,
)


class SourceCapture:
    """Capture and lineage writes; ``on_capture`` listeners (the extraction worker) hear of each new Source."""

    store: Store
    _embedder: GuardedEmbedder
    _capture_listeners: list[Callable[[], None]]  # set by ``WriteService``

    def _source_store(self) -> SourceStore:
        if not isinstance(self.store, SourceStore):
            raise FamilyUnsupported()
        return self.store

    def on_capture(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (no arguments, nothing of the Source) after each captured Source is stored."""
        self._capture_listeners.append(listener)

    def capture_source(
        self,
        scope_id: str,
        kind: SourceKind,
        content: str,
        observed_at: str | None = None,
        origin: SourceOrigin | None = None,
    ) -> SourceRecord:
        """Store a Source, redacted first (``sources.redaction``), pending extraction."""
        from powercontext.sources.redaction import redact  # the scanner's plugins load on the first capture

        redacted = redact(content)
        digest = hashlib.sha256(redacted.text.encode("utf-8")).hexdigest()
        source = NewSource(kind, redacted.text, digest, redacted.counts, origin or SourceOrigin(), observed_at)
        record = self._source_store().create_source(scope_id, source)
        for listener in list(self._capture_listeners):
            listener()
        return record

    def apply_source(
        self, claim: ClaimedSource, operations: Sequence[SourceOperation], status: ExtractionStatus
    ) -> SourceRecord:
        """Apply a claimed Source's extracted operations with it as lineage, and set its state, in one store
        transaction; each new text's embedding is computed first, outside it."""
        texts = [op.text for op in operations if isinstance(op, WRITES_TEXT)]
        vectors: list[Embedding | None] = self._embedder.embed_for_write(texts) if texts else []
        embedded: list[SourceOperation] = []
        for op in operations:
            if isinstance(op, WRITES_TEXT):
                embedded.append(replace(op, embedding=vectors.pop(0)))
            else:
                embedded.append(op)
        return self._source_store().finish_source(claim, embedded, status)

    def defer_source(self, claim: ClaimedSource, reason: str, retry_at: str | None, give_up: bool) -> SourceRecord:
        """Leave a claimed Source pending with ``reason`` (or failed when ``give_up``); see ``SourceStore``."""
        return self._source_store().defer_source(claim, reason, retry_at, give_up)

    def propose_source(self, claim: ClaimedSource, operations: Sequence[SourceOperation]) -> SourceRecord:
        """Put a claimed Source's extracted operations in the review inbox (see ``SourceStore.propose_source``)."""
        return self._source_store().propose_source(claim, operations)

    def approve_memory_candidate(self, scope_id: str, candidate_id: str) -> MemoryCandidate:
        """Apply a pending Candidate with its Source as lineage; the new text's embedding is computed first (none
        for a purged Candidate, which the store refuses with ``410 purged``)."""
        store = self._source_store()
        candidate = store.read_memory_candidate(scope_id, candidate_id)
        operation = candidate.operation
        text = operation.text if isinstance(operation, WRITES_TEXT) and not candidate.purged else None
        embedding = self._embedder.embed_for_write([text])[0] if text is not None else None
        return store.approve_memory_candidate(scope_id, candidate_id, embedding)

    def reject_memory_candidate(self, scope_id: str, candidate_id: str, reason: str | None) -> MemoryCandidate:
        return self._source_store().reject_memory_candidate(scope_id, candidate_id, reason)

    def purge_source(self, scope_id: str, source_id: str) -> SourceRecord:
        """Erase a Source's content for good (``SourceStore.purge_source``)."""
        return self._source_store().purge_source(scope_id, source_id)

    def set_extraction_policy(self, scope_id: str, policy: ExtractionPolicy) -> ExtractionPolicy:
        """Set whether the Scope's extracted writes apply at once or wait in the review inbox."""
        return self._source_store().set_extraction_policy(scope_id, policy)
