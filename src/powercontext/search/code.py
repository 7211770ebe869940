"""Code query: BM25 over identifier and path terms of every registered work tree of a Scope, plus vectors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from powercontext.code.identifiers import code_query_terms
from powercontext.domain.identity import CodeRangeText
from powercontext.search.channels import HybridWeights
from powercontext.search.code_definitions import split_definitions
from powercontext.search.embedding import FallbackReason, GuardedEmbedder, VectorChannel
from powercontext.search.fusion import fuse
from powercontext.store.code import CodeStore, ScoredCodeChunk
from powercontext.text.normalize import normalize_query


@dataclass(frozen=True, slots=True)
class CodeHit(CodeRangeText):
    """One cited chunk. ``text`` is exactly lines ``start_line..end_line`` as indexed (with their
    terminators), so ``snippet_sha256 == "sha256:" + sha256(text.encode("utf-8")).hexdigest()``."""

    language: str
    score: float


CodeKey = tuple[str, str, int]  # fingerprint, path, start line: one indexed range


class CodeSearchProbe(Protocol):
    """Receives what one code search computed (explain only; see ``recall.probe``)."""

    def code_terms(self, terms: Sequence[str]) -> None:
        """The identifier terms the full-text side searched with."""

    def code_list(self, channel: Literal["fts", "vector", "fused"], hits: Sequence[tuple[CodeKey, float]]) -> None:
        """One ranked list with its scores; ``fused`` is the answer in its final order."""

    def code_definitions(self, keys: Sequence[CodeKey]) -> None:
        """The ranges moved ahead because they define an identifier the query names."""


class CodeSearch:
    """Searches the code evidence of one Scope (all of its registered work trees).

    Full text always; with an embedding provider that answers, also the vector channel, fused by
    reciprocal rank (scores of the two channels are not comparable, ranks are). The Receipt's mode is
    ``code`` either way; a dropped vector channel shows as the group's ``fallback_reason``.
    """

    def __init__(
        self,
        store: CodeStore,
        embedder: GuardedEmbedder | None = None,
        weights: HybridWeights | None = None,
        vectors_complete: Callable[[str], bool] | None = None,
    ) -> None:
        """``vectors_complete`` says whether a Scope's chunks all have vectors; until then it is searched by full
        text alone (``search/code_backfill.py``)."""
        self._store = store
        self._embedder = embedder
        self._weights = weights or HybridWeights()
        self._vectors_complete = vectors_complete or (lambda _: True)

    def query(self, scope_id: str, query: str, limit: int) -> list[CodeHit]:
        """Best chunks first; ``[]`` when nothing matches. Does not check that the Scope exists."""
        return self.query_with_reason(scope_id, query, limit)[0]

    def query_with_reason(
        self,
        scope_id: str,
        query: str,
        limit: int,
        channel: VectorChannel | None = None,
        probe: CodeSearchProbe | None = None,
    ) -> tuple[list[CodeHit], FallbackReason]:
        """The hits, and why the vector channel was not used (``none`` when it was, or when none exists).
        ``probe`` (explain only) receives each ranked list as this search computed it."""
        normalized = normalize_query(query)
        # A deeper pool than the answer, so that a defining chunk BM25 ranks below the cut still leads.
        depth = max(2 * limit, 32)
        terms = code_query_terms(normalized)
        if probe is not None:
            probe.code_terms(terms)
        if self._embedder is None or not self._vectors_complete(scope_id):
            return _ranked(self._full_text(scope_id, terms, depth, probe), query, limit, probe), "none"
        planned = (channel or VectorChannel(self._embedder)).query_vector(0, normalized, scope_id)
        if isinstance(planned, str):
            return _ranked(self._full_text(scope_id, terms, depth, probe), query, limit, probe), planned
        w = self._weights
        text = self._full_text(scope_id, terms, depth, probe)
        vectors = self._store.search_code_vector(scope_id, self._embedder.model_id, planned, depth)
        if probe is not None:
            probe.code_list("vector", _scored(vectors))
        fused = fuse([(text, w.fts), (vectors, w.vector)], w.k, depth, key_of=_chunk_key)
        return _ranked(fused, query, limit, probe), "none"

    def _full_text(
        self, scope_id: str, terms: list[str], limit: int, probe: CodeSearchProbe | None
    ) -> list[ScoredCodeChunk]:
        hits = self._store.search_code(scope_id, terms, limit)
        if probe is not None:
            probe.code_list("fts", _scored(hits))
        return hits


def _ranked(pool: list[ScoredCodeChunk], query: str, limit: int, probe: CodeSearchProbe | None) -> list[CodeHit]:
    defining, rest = split_definitions(pool, [s.chunk.text for s in pool], query)
    ordered = (defining + rest)[:limit]
    if probe is not None:
        probe.code_list("fused", _scored(ordered))
        probe.code_definitions([_chunk_key(s) for s in defining])
    return [_hit(s) for s in ordered]


def _scored(hits: Sequence[ScoredCodeChunk]) -> list[tuple[CodeKey, float]]:
    return [(_chunk_key(s), float(s.score)) for s in hits]


def _chunk_key(scored: ScoredCodeChunk) -> CodeKey:
    c = scored.chunk
    return (c.fingerprint, c.path, c.start_line)


def _hit(scored: ScoredCodeChunk) -> CodeHit:
    c = scored.chunk
    return CodeHit(
        c.scope_id, c.fingerprint, c.path, c.file_sha256, c.start_line, c.end_line, c.snippet_sha256, c.text,
        c.language, scored.score,
    )  # fmt: skip
