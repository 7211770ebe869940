"""Refusals of the Prompt layer. None of their messages quotes instructions, demonstrations or compiled text."""

from __future__ import annotations

from powercontext.domain.errors import RequestRefused


class PromptUnavailable(RequestRefused):
    """A Scope's custom Prompt exists but cannot be honoured (it no longer validates against the current
    definition, or the store cannot be read). Never answered by silently using the built-in instead."""

    code, status = "prompt-unavailable", 503

    def __init__(
        self,
        message: str = "this Scope's custom Prompt cannot be used; set it again or return it to auto",
    ) -> None:
        super().__init__(message)


class UnknownPromptKey(RequestRefused):
    code, status = "unknown-prompt-key", 404

    def __init__(self, known: tuple[str, ...]) -> None:
        super().__init__(f"no Prompt is registered under this key; the keys are {', '.join(known)}")


class PromptContentInvalid(RequestRefused):
    """Prompt content that breaks a rule of ``powercontext.prompt.v1``; ``code`` names the rule."""

    status = 422

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
