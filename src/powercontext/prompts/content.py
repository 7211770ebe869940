"""The rules of a Scope's Prompt content (``powercontext.prompt.v1``, CONTRACTS §12) and its compiled text.

``normalize`` then ``validate`` run before a commit (a broken rule is a 422 naming it) and ``validate`` runs
again at resolution: a stored revision that a later definition no longer accepts cannot be honoured.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from dataclasses import replace
from typing import Final

import rfc8785

from powercontext.prompts.definitions import PromptDefinition, compile_instructions
from powercontext.prompts.errors import PromptContentInvalid
from powercontext.store.base import PROMPT_SCHEMA_VERSION, JsonValue, PromptContent, PromptDemonstration

MAX_INSTRUCTIONS_CHARS: Final = 32_768
MAX_DEMONSTRATIONS: Final = 50
MAX_DEMONSTRATION_BYTES: Final = 64 * 1024  # canonical JSON of {"input", "expected_output"}
MAX_CONTENT_BYTES: Final = 256 * 1024  # canonical JSON of the whole content
MAX_RERANK_DEMO_CANDIDATES: Final = 100
MAX_EXPAND_QUERIES: Final = 3

# Returns what is wrong with one demonstration (no content quoted), or None.
DemonstrationCheck = Callable[[JsonValue, JsonValue], str | None]


def _nonblank_strings(value: JsonValue, low: int, high: int) -> bool:
    return (
        isinstance(value, list) and low <= len(value) <= high and all(isinstance(v, str) and v.strip() for v in value)
    )


def _rerank_demonstration(given: JsonValue, expected: JsonValue) -> str | None:
    if not isinstance(given, dict) or set(given) != {"request", "candidates"}:
        return 'input must be an object with exactly "request" and "candidates"'
    request, candidates = given["request"], given["candidates"]
    if not isinstance(request, str) or not request.strip():
        return "input.request must be a non-blank string"
    if not _nonblank_strings(candidates, 1, MAX_RERANK_DEMO_CANDIDATES):
        return f"input.candidates must be 1..{MAX_RERANK_DEMO_CANDIDATES} non-blank strings"
    assert isinstance(candidates, list)
    if not isinstance(expected, dict) or set(expected) != {"ranks"}:
        return 'expected_output must be an object with exactly "ranks"'
    ranks = expected["ranks"]
    if not isinstance(ranks, list) or not all(type(r) is int and 1 <= r <= len(candidates) for r in ranks):
        return "expected_output.ranks must be candidate numbers, 1 to the number of candidates"
    if len(set(ranks)) != len(ranks):
        return "expected_output.ranks must name each candidate at most once"
    return None


def _expand_demonstration(given: JsonValue, expected: JsonValue) -> str | None:
    if not isinstance(given, dict) or set(given) != {"request"}:
        return 'input must be an object with exactly "request"'
    if not isinstance(given["request"], str) or not given["request"].strip():
        return "input.request must be a non-blank string"
    if not isinstance(expected, dict) or set(expected) != {"queries"}:
        return 'expected_output must be an object with exactly "queries"'
    if not _nonblank_strings(expected["queries"], 1, MAX_EXPAND_QUERIES):
        return f"expected_output.queries must be 1..{MAX_EXPAND_QUERIES} non-blank strings"
    return None


# The registered input and output types, per Prompt key: what the model is given and must answer.
DEMONSTRATION_TYPES: Final[dict[str, DemonstrationCheck]] = {
    "memory.rerank": _rerank_demonstration,
    "recall.expand": _expand_demonstration,
}


def normalize(content: PromptContent) -> PromptContent:
    """Instructions trimmed and in Unicode NFC, as they are stored and compiled."""
    return replace(content, instructions=unicodedata.normalize("NFC", content.instructions).strip())


def _canonical(value: JsonValue) -> bytes:
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, RecursionError):
        # Integers beyond ±2^53 and non-finite numbers have no canonical JSON form.
        raise PromptContentInvalid(
            "invalid-prompt-demonstration",
            "a demonstration holds a number outside what canonical JSON allows (integers beyond ±2^53, NaN, ∞)",
        ) from None


def validate(definition: PromptDefinition, content: PromptContent) -> None:
    """Raise ``PromptContentInvalid`` (its ``code`` names the rule) unless ``content`` is a valid, normalized
    ``powercontext.prompt.v1`` override of ``definition``."""
    if content.schema_version != PROMPT_SCHEMA_VERSION:
        raise PromptContentInvalid("unsupported-prompt-schema", f"schema_version must be {PROMPT_SCHEMA_VERSION!r}")
    if content.mode == "auto":
        if content.instructions or content.demonstrations:
            raise PromptContentInvalid(
                "prompt-auto-not-empty", "an auto Prompt has no instructions and no demonstrations"
            )
        return
    if content.mode != "custom":
        raise PromptContentInvalid("invalid-prompt-mode", "mode must be auto or custom")
    if not content.instructions.strip():
        raise PromptContentInvalid(
            "prompt-instructions-required", "a custom Prompt needs instructions with a non-space character"
        )
    if len(content.instructions) > MAX_INSTRUCTIONS_CHARS:
        raise PromptContentInvalid(
            "prompt-instructions-too-long",
            f"instructions are {len(content.instructions)} characters; the limit is {MAX_INSTRUCTIONS_CHARS}",
        )
    if len(content.demonstrations) > MAX_DEMONSTRATIONS:
        raise PromptContentInvalid(
            "too-many-prompt-demonstrations",
            f"{len(content.demonstrations)} demonstrations; the limit is {MAX_DEMONSTRATIONS}",
        )
    check = DEMONSTRATION_TYPES.get(definition.key)
    for i, demo in enumerate(content.demonstrations):
        size = len(_canonical(demo.wire()))
        if size > MAX_DEMONSTRATION_BYTES:
            raise PromptContentInvalid(
                "prompt-demonstration-too-large",
                f"demonstrations[{i}] is {size} bytes of canonical JSON; the limit is {MAX_DEMONSTRATION_BYTES}",
            )
        problem = "this Prompt takes no demonstrations" if check is None else check(demo.input, demo.expected_output)
        if problem is not None:
            raise PromptContentInvalid("invalid-prompt-demonstration", f"demonstrations[{i}]: {problem}")
    total = len(_canonical(content.wire()))
    if total > MAX_CONTENT_BYTES:
        raise PromptContentInvalid(
            "prompt-too-large", f"the Prompt is {total} bytes of canonical JSON; the limit is {MAX_CONTENT_BYTES}"
        )


def _render(value: JsonValue) -> str:
    return rfc8785.dumps(value).decode("utf-8")


def compile_custom(
    definition: PromptDefinition, instructions: str, demonstrations: tuple[PromptDemonstration, ...]
) -> str:
    """The text a model is sent for a custom Prompt, in fixed order: the definition's invariants (which carry
    the output contract), the Scope's instructions, then each demonstration as canonical JSON.

    Without demonstrations it is exactly the built-in layout with the Scope's instructions as guidance."""
    text = compile_instructions(definition, instructions)
    if not demonstrations:
        return text
    examples = "\n\n".join(f"Input: {_render(d.input)}\nOutput: {_render(d.expected_output)}" for d in demonstrations)
    return f"{text}\n\nExamples:\n\n{examples}"
