"""Resolution of a Scope's Prompt at invocation time (CONTRACTS §12).

Select the definition → read the Scope's head → no head, a retired head or an auto head: the built-in →
else validate the custom content against the current definition → compile in fixed order → digest → freeze.
A custom head that cannot be honoured raises ``PromptUnavailable``; it never falls back to the built-in.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Final, Literal

from powercontext.contract.prompts import PromptCapability
from powercontext.prompts.content import compile_custom, validate
from powercontext.prompts.definitions import (
    BUILTIN_DEFINITIONS,
    PromptDefinition,
    ResolvedPrompt,
    compiled_digest,
    resolve_builtin,
)
from powercontext.prompts.errors import PromptContentInvalid, PromptUnavailable, UnknownPromptKey
from powercontext.store.base import PromptRecord, PromptStore
from powercontext.store.errors import StoreUnavailable

PromptResolver = Callable[[str, str], ResolvedPrompt]
"""``resolve_prompt(scope_id, key)``: the seam inference callers use (``resolve_builtin`` or a resolver)."""

# Compiled custom Prompts by exact revision: a revision is immutable, so an entry never goes stale.
_CACHE_SIZE: Final = 256


class ScopePromptResolver:
    """Resolves a Scope's Prompt for one key from a ``PromptStore``. Thread-safe; one store read per call."""

    def __init__(self, store: PromptStore, definitions: Mapping[str, PromptDefinition] = BUILTIN_DEFINITIONS) -> None:
        self._store = store
        self._definitions = definitions
        self._compiled: OrderedDict[tuple[str, str, int, int], ResolvedPrompt] = OrderedDict()
        self._lock = threading.Lock()

    def definition(self, key: str) -> PromptDefinition:
        """The registered definition; ``UnknownPromptKey`` for any other key."""
        definition = self._definitions.get(key)
        if definition is None:
            raise UnknownPromptKey(tuple(self._definitions))
        return definition

    def __call__(self, scope_id: str, key: str) -> ResolvedPrompt:
        return self.resolve(scope_id, key)

    def resolve(self, scope_id: str, key: str) -> ResolvedPrompt:
        definition = self.definition(key)
        try:
            head = self._store.read_prompt_head(scope_id, key)
        except StoreUnavailable:
            # Not knowing whether a custom head exists is not the same as having none.
            raise PromptUnavailable("the store could not be read to resolve this Scope's Prompt; retry") from None
        return self.resolve_head(scope_id, definition, head)

    def resolve_head(self, scope_id: str, definition: PromptDefinition, head: PromptRecord | None) -> ResolvedPrompt:
        """Resolution given the head already read (``None``: the Scope has no ``prompt`` Artifact for the key)."""
        if head is None or head.state != "active" or head.content.mode == "auto":
            return resolve_builtin(scope_id, definition.key)
        cache_key = (scope_id, definition.key, head.key.revision, definition.definition_version)
        with self._lock:
            cached = self._compiled.get(cache_key)
            if cached is not None:
                self._compiled.move_to_end(cache_key)
                return cached
        try:
            validate(definition, head.content)
        except PromptContentInvalid as exc:
            raise PromptUnavailable(
                f"this Scope's custom {definition.key} Prompt (revision {head.key.revision}) no longer fits "
                f"definition version {definition.definition_version} ({exc.code}); set it again or return it "
                "to auto"
            ) from None
        text = compile_custom(definition, head.content.instructions, head.content.demonstrations)
        resolved = ResolvedPrompt(
            scope_id=scope_id,
            key=definition.key,
            definition_version=definition.definition_version,
            builtin_version=definition.builtin_version,
            selection="artifact",
            selected_version=head.key.revision,
            compiled_digest=compiled_digest(definition.key, definition.definition_version, text),
            artifact_address=head.key.to_address(),
            compiled_text=text,
        )
        with self._lock:
            self._compiled[cache_key] = resolved
            while len(self._compiled) > _CACHE_SIZE:
                self._compiled.popitem(last=False)
        return resolved


def prompt_resolver_for(store: object) -> PromptResolver:
    """The resolver for a runtime's store: Scope-owned Prompts when it is a ``PromptStore``, else the built-ins."""
    if isinstance(store, PromptStore):
        return ScopePromptResolver(store)
    return resolve_builtin


def prompt_capabilities(store: object) -> dict[str, PromptCapability]:
    """The capabilities' ``prompts`` map: every registered key, its versions, and whether Scopes may override it."""
    status: Literal["supported", "unsupported"] = "supported" if isinstance(store, PromptStore) else "unsupported"
    return {
        key: PromptCapability(status=status, definition_version=d.definition_version, builtin_version=d.builtin_version)
        for key, d in BUILTIN_DEFINITIONS.items()
    }
