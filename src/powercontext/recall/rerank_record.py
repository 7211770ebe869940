"""``RerankConfigRecord``: what one rerank invocation ran with.

It lives apart from ``recall.rerank`` because both the reranker (which makes it) and ``RecallTrace`` (which holds
it until the Receipt is assembled) need it, and the reranker itself records onto the trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from powercontext.inference.generation import SettingValue
from powercontext.inference.generation_config import SAFE_SETTINGS
from powercontext.prompts.definitions import ResolvedPrompt


@dataclass(frozen=True)
class RerankConfigRecord:
    """What one rerank invocation ran with: the content-free record a Receipt's ``rerank_configs`` entry and
    its digest are made of. ``prompt`` is the ResolvedPrompt bound to the invocation (only its identity leaves
    the process)."""

    policy_id: str
    model: str | None  # credential-free provider:model; None only for a declared deterministic reranker
    effective_settings: Mapping[str, SettingValue]
    timeout_seconds: float
    max_requests: int
    prompt: ResolvedPrompt | None
    model_backed: bool

    def is_complete(self) -> bool:
        """Evidence a Receipt can state without inventing anything."""
        if not self.policy_id or self.max_requests < 0 or self.timeout_seconds < 0:
            return False
        if any(name not in SAFE_SETTINGS for name in self.effective_settings):
            return False
        if self.model_backed:
            return self.model is not None
        return self.model is None and self.prompt is None
