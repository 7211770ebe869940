"""The model extractor: a Source and its related active memories in, create / revise / merge / forget operations
out.

With a generation provider configured, each pending Source is sent, with the Scope's resolved ``memory.extract``
Prompt (a Scope-owned Prompt may replace the default guidance, as for rerank), to the model together with the
numbered active Atomic Memories a search for the Source's text finds (``related``). The model names a memory by
its number (a merge names two or more); the operation carries each memory's exact revision, so the store's
compare-and-swap refuses it if one changed meanwhile (the Source is then extracted again). An answer outside the
contract is rejected whole: nothing of it is applied.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Final

from powercontext.contract.common import MemoryKind
from powercontext.inference.errors import InferenceError
from powercontext.inference.generation import ChatMessage, GenerationProvider, InvalidOutput, json_answer
from powercontext.inference.generation_config import ModelCallConfig
from powercontext.jobs.extraction import ExtractionUnavailable
from powercontext.prompts.definitions import MEMORY_EXTRACT, ResolvedPrompt
from powercontext.prompts.errors import PromptUnavailable
from powercontext.store.base import MemoryRecord
from powercontext.store.source_records import (
    CreateMemory,
    ForgetMemory,
    MergeMemories,
    ReviseMemory,
    SourceOperation,
    SourceRecord,
)

log = logging.getLogger("powercontext.jobs")

KINDS: Final = frozenset(MemoryKind.__args__)  # type: ignore[attr-defined]
MAX_OPERATIONS = 20
MAX_TEXT_BYTES = 8000  # an Atomic Memory's body limit
MAX_SOURCE_CHARS = 32_000  # of the Source in the message; the rest is cut (the Source itself stays whole)
MAX_MEMORY_CHARS = 1000  # per related memory in the message

Related = Callable[[str, str], Sequence[MemoryRecord]]  # (scope_id, text) -> active memories
Resolve = Callable[[str, str], ResolvedPrompt]


def extract_message(source: SourceRecord, related: Sequence[MemoryRecord]) -> str:
    """The user message: the Source (kind, time, content), then the related memories, one numbered line each."""
    lines = [f"Source ({source.ref.kind}, observed {source.ref.observed_at}):", source.content[:MAX_SOURCE_CHARS]]
    lines += ["", "Active memories:" if related else "Active memories: none"]
    for number, memory in enumerate(related, start=1):
        text = " ".join(memory.text.split())[:MAX_MEMORY_CHARS]
        lines.append(f"[{number}] ({memory.kind}, observed {memory.observed}) {text}")
    return "\n".join(lines)


def parse_operations(answer: str, related: Sequence[MemoryRecord]) -> list[SourceOperation]:
    """The operations of ``{"operations": [...]}``; ``InvalidOutput`` for anything outside the contract."""
    payload = json_answer(answer, "extraction")
    items = payload.get("operations") if isinstance(payload, dict) else None
    if not isinstance(items, list) or len(items) > MAX_OPERATIONS:
        raise InvalidOutput("the extraction answer has no list of at most 20 'operations'")
    operations: list[SourceOperation] = []
    targeted: set[int] = set()
    for item in items:
        op = item.get("op") if isinstance(item, dict) else None
        if op == "create":
            operations.append(CreateMemory(_text(item), _kind(item)))
            continue
        if op == "merge":
            numbers = _numbers(item.get("memories"), len(related), targeted, minimum=2)
            sources = tuple((related[n - 1].key.artifact_id, related[n - 1].key.revision) for n in numbers)
            operations.append(MergeMemories(sources, _text(item), _kind(item)))
            continue
        number = item.get("memory") if isinstance(item, dict) else None
        memory = related[_numbers([number], len(related), targeted)[0] - 1]
        if op == "revise":
            operations.append(ReviseMemory(memory.key.artifact_id, memory.key.revision, _text(item)))
        elif op == "forget":
            operations.append(ForgetMemory(memory.key.artifact_id, memory.key.revision))
        else:
            raise InvalidOutput("an extraction operation is not create, revise, merge or forget")
    return operations


def _numbers(raw: object, listed: int, targeted: set[int], minimum: int = 1) -> list[int]:
    """The listed memories an operation names (a merge names two or more), each at most once per answer."""
    if not isinstance(raw, list) or not raw:
        raise InvalidOutput("an extraction operation names no listed memory")
    if len(raw) < minimum:
        raise InvalidOutput("a merge names at least two listed memories")
    numbers: list[int] = []
    for number in raw:
        if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= listed:
            raise InvalidOutput("an extraction operation names no listed memory")
        if number in targeted:
            raise InvalidOutput("an extraction answer changes one memory twice")
        targeted.add(number)
        numbers.append(number)
    return numbers


def _kind(item: dict[str, object]) -> str:
    kind = item.get("kind")
    return kind if isinstance(kind, str) and kind in KINDS else "fact"


def _text(item: dict[str, object]) -> str:
    text = item.get("text")
    if not isinstance(text, str) or not text.strip() or len(text.encode("utf-8")) > MAX_TEXT_BYTES:
        raise InvalidOutput("an extraction operation's text is missing, blank or over 8000 bytes")
    return text.strip()


class ModelExtractor:
    """``jobs.extraction.Extractor`` with a generation model (see the module)."""

    model_backed = True

    def __init__(self, provider: GenerationProvider, call: ModelCallConfig, resolve: Resolve, related: Related):
        self._provider, self._call, self._resolve, self._related = provider, call, resolve, related

    def operations(self, source: SourceRecord) -> list[SourceOperation] | None:
        scope_id = source.ref.scope_id
        try:
            prompt = self._resolve(scope_id, MEMORY_EXTRACT)
        except PromptUnavailable:
            raise ExtractionUnavailable("prompt_unavailable") from None
        related = [m for m in self._related(scope_id, source.content) if m.state == "active"]
        messages = [ChatMessage("system", prompt.compiled_text), ChatMessage("user", extract_message(source, related))]
        try:
            answer = self._provider.complete(self._call.model, messages, self._call.settings, self._call.timeout_s)
            return parse_operations(answer, related)
        except InferenceError as exc:
            raise ExtractionUnavailable(exc.reason) from None
        except InvalidOutput:
            log.warning("event=extraction.invalid_output")
            raise ExtractionUnavailable("invalid_output") from None
