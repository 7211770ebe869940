"""The provider used when embeddings are switched off: it reports itself unconfigured and never answers."""

from __future__ import annotations

from collections.abc import Sequence

from powercontext.inference.base import Vectors
from powercontext.inference.errors import InferenceUnavailable


class NoEmbeddings:
    """``configured`` is False, so callers can choose the lexical path without trying ``embed`` first."""

    name = "none"
    model_id = ""
    dimension = 0
    configured = False

    def embed(self, texts: Sequence[str]) -> Vectors:
        raise InferenceUnavailable("no embedding provider is configured")

    def call_budget_s(self, count: int) -> float | None:
        return None

    def close(self) -> None:
        return None
