"""Code query: BM25 over identifier and path terms of every registered work tree of a Scope."""

from __future__ import annotations

from dataclasses import dataclass

from powercontext.code.identifiers import code_query_terms
from powercontext.store.code import CodeStore, ScoredCodeChunk
from powercontext.text.normalize import normalize_query


@dataclass(frozen=True, slots=True)
class CodeHit:
    """One cited chunk. ``text`` is exactly lines ``start_line..end_line`` as indexed (with their
    terminators), so ``snippet_sha256 == "sha256:" + sha256(text.encode("utf-8")).hexdigest()``."""

    scope_id: str
    fingerprint: str
    path: str
    file_sha256: str
    start_line: int
    end_line: int
    snippet_sha256: str
    text: str
    language: str
    score: float


class CodeSearch:
    """Searches the code evidence of one Scope (all of its registered work trees).

    Only the full-text channel exists. A vector channel belongs beside ``_full_text``: a second ranked
    list for the same query, fused with it by reciprocal rank in ``query`` (scores of the two channels
    are not comparable, ranks are).
    """

    def __init__(self, store: CodeStore) -> None:
        self._store = store

    def query(self, scope_id: str, query: str, limit: int) -> list[CodeHit]:
        """Best chunks first; ``[]`` when no query term is indexed. Does not check that the Scope exists."""
        return [_hit(scored) for scored in self._full_text(scope_id, query, limit)]

    def _full_text(self, scope_id: str, query: str, limit: int) -> list[ScoredCodeChunk]:
        return self._store.search_code(scope_id, code_query_terms(normalize_query(query)), limit)


def _hit(scored: ScoredCodeChunk) -> CodeHit:
    c = scored.chunk
    return CodeHit(
        c.scope_id, c.fingerprint, c.path, c.file_sha256, c.start_line, c.end_line, c.snippet_sha256, c.text,
        c.language, scored.score,
    )  # fmt: skip
