"""Expansion rounds: when round 0 is thin, search again (at most twice) with another query and merge.

Policies (``POWERCONTEXT_EXPANSION``):

* ``widen``: model-free pseudo-relevance feedback. Round 0 admitted fewer candidates than a family's
  ceiling, so the next round relaxes what the query admits: it adds the words the best candidates found so
  far share (the vocabulary the answers were recorded in), 5 in round 1 and 10 in round 2.
* ``model``: the ``recall.expand`` Prompt asks the generation model once for alternative queries; round 1
  searches the first, round 2 the second. Non-deterministic by construction.

The expanded query text and the model's answer stay in this process's memory: never stored, logged, traced
or put in a Receipt.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from powercontext.domain.candidates import Candidate
from powercontext.inference.errors import InferenceError
from powercontext.inference.generation import ChatMessage, GenerationProvider, InvalidOutput, json_answer
from powercontext.inference.generation_config import ModelCallConfig
from powercontext.prompts.definitions import RECALL_EXPAND
from powercontext.prompts.errors import PromptUnavailable
from powercontext.recall.rerank import PromptResolver
from powercontext.recall.trace import RecallTrace

log = logging.getLogger("powercontext.recall")

MAX_ROUNDS_AFTER_ZERO = 2
_WORD = re.compile(r"[^\W_]{3,}")
# Words too common in any project's notes to say anything about one topic.
_STOPWORD_TEXT = (
    "the and for with that this from are was were has have had not but use used uses using into our when "
    "what which who how why all any can will would should could its also than then them they their there "
    "been being after before about over only each more most some such per via"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


class ExpansionFailed(Exception):
    """An expansion round could not run; its reason is content-free."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Expander(Protocol):
    """Gives the query of each expansion round, or None when there is nothing to widen with."""

    model_backed: bool

    def round_query(
        self, round: int, query: str, scope_id: str, seeds: Sequence[Candidate], trace: RecallTrace
    ) -> str | None: ...


class WidenExpander:
    """Model-free: the query plus the words shared most by the best candidates so far (pseudo-relevance
    feedback). Deterministic; no provider call."""

    model_backed = False

    def __init__(self, seeds_per_round: tuple[int, int] = (3, 5), terms_per_round: tuple[int, int] = (5, 10)) -> None:
        self._seeds = seeds_per_round
        self._terms = terms_per_round

    def round_query(
        self, round: int, query: str, scope_id: str, seeds: Sequence[Candidate], trace: RecallTrace
    ) -> str | None:
        top = seeds[: self._seeds[round - 1]]
        if not top:
            return None  # nothing retrieved: no vocabulary to widen with
        asked = {w.casefold() for w in _WORD.findall(query)}
        docs: Counter[str] = Counter()
        first_seen: dict[str, int] = {}
        for candidate in top:
            words = {w.casefold() for w in _WORD.findall(candidate.text)}
            for word in sorted(words):
                if word in asked or word in _STOPWORDS or word.isdigit():
                    continue
                docs[word] += 1
                first_seen.setdefault(word, len(first_seen))
        extra = sorted(docs, key=lambda w: (-docs[w], first_seen[w]))[: self._terms[round - 1]]
        return f"{query} {' '.join(extra)}" if extra else None


class ModelExpander:
    """Asks the generation model, with the request Scope's ``recall.expand`` Prompt, for alternative queries."""

    model_backed = True

    def __init__(self, provider: GenerationProvider, call: ModelCallConfig, resolve_prompt: PromptResolver) -> None:
        self._provider = provider
        self._call = call
        self._resolve = resolve_prompt

    def round_query(
        self, round: int, query: str, scope_id: str, seeds: Sequence[Candidate], trace: RecallTrace
    ) -> str | None:
        queries = self._queries(query, scope_id, trace)
        return queries[round - 1] if round - 1 < len(queries) else None

    def _queries(self, query: str, scope_id: str, trace: RecallTrace) -> list[str]:
        # One model call per prepare: the alternatives of every round come from the same answer. The cache
        # lives on the trace's request-local state, never on this shared object.
        cached = trace.expansion_queries
        if cached is not None:
            return cached
        # Skipped, not attempted, when the prepare's deadline leaves no time or its model calls are used up.
        if not trace.budget.can_start():
            raise ExpansionFailed("inference_timeout")
        if not trace.budget.take_model_call():
            raise ExpansionFailed("max_requests")
        trace.non_deterministic = True
        try:
            prompt = self._resolve(scope_id, RECALL_EXPAND)
        except PromptUnavailable:
            raise ExpansionFailed("prompt_unavailable") from None
        messages = [ChatMessage("system", prompt.compiled_text), ChatMessage("user", f"Request:\n{query}")]
        with trace.stage("recall.expand"):
            try:
                answer = self._provider.complete(self._call.model, messages, self._call.settings, self._call.timeout_s)
                queries = parse_queries(answer)
            except InferenceError as exc:
                raise ExpansionFailed(exc.reason) from None
            except InvalidOutput:
                raise ExpansionFailed("invalid_output") from None
        trace.expansion_queries = queries
        return queries


def parse_queries(answer: str) -> list[str]:
    """Non-blank, distinct queries from ``{"queries": [...]}``, at most 3, each at most 1,000 characters."""
    payload = json_answer(answer, "expansion")
    queries = payload.get("queries") if isinstance(payload, dict) else None
    if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
        raise InvalidOutput("the expansion answer has no list of strings in 'queries'")
    kept: list[str] = []
    for q in queries:
        q = " ".join(q.split())[:1000]
        if q and q not in kept:
            kept.append(q)
    if not kept:
        raise InvalidOutput("the expansion answer has no usable query")
    return kept[:3]
