"""Placeholder until the providers land: only ``none`` (replaced by the inference branch)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from powercontext.inference.base import EmbeddingProvider
from powercontext.inference.errors import InferenceUnavailable


class EmbeddingConfigError(ValueError):
    pass


@dataclass(frozen=True)
class EmbeddingConfig:
    provider: Literal["none", "openai-compatible", "local"] = "none"
    base_url: str | None = None
    model: str | None = None
    dimension: int | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 2.0
    batch_size: int = 64

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> EmbeddingConfig:
        return cls()


class NoEmbeddings:
    name = "none"
    model_id = ""
    dimension = 0
    configured = False

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        raise InferenceUnavailable("no embedding provider is configured")

    def close(self) -> None:
        pass


def build_embedding_provider(config: EmbeddingConfig) -> EmbeddingProvider:
    return NoEmbeddings()
