"""Why a Prompt could not be resolved for an invocation."""

from __future__ import annotations


class PromptUnavailable(Exception):
    """A Scope's Prompt cannot be honoured (e.g. a custom head that is unreadable or incompatible).

    The invocation that needed it fails; it never falls back to the built-in silently. The message is
    content-free: it names the key, never instructions or demonstrations.
    """

    def __init__(self, scope_id: str, key: str, detail: str = "the Scope's Prompt cannot be honoured") -> None:
        super().__init__(f"{key}: {detail}")
        self.scope_id = scope_id
        self.key = key
