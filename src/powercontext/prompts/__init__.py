"""Scope-owned Prompts: built-in definitions, a Scope's ``prompt`` Artifact overrides, and the frozen
``ResolvedPrompt`` an inference call is bound to (CONTRACTS §12)."""

from powercontext.prompts.definitions import (
    BUILTIN_DEFINITIONS,
    MEMORY_RERANK,
    RECALL_EXPAND,
    PromptDefinition,
    ResolvedPrompt,
    compile_instructions,
    compiled_digest,
    resolve_builtin,
)
from powercontext.prompts.errors import PromptContentInvalid, PromptUnavailable, UnknownPromptKey
from powercontext.prompts.resolver import PromptResolver, ScopePromptResolver, prompt_resolver_for

__all__ = [
    "BUILTIN_DEFINITIONS",
    "MEMORY_RERANK",
    "RECALL_EXPAND",
    "PromptContentInvalid",
    "PromptDefinition",
    "PromptResolver",
    "PromptUnavailable",
    "ResolvedPrompt",
    "ScopePromptResolver",
    "UnknownPromptKey",
    "compile_instructions",
    "compiled_digest",
    "prompt_resolver_for",
    "resolve_builtin",
]
