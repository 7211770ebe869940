"""Embedding providers: none, any OpenAI-compatible server, or the offline local MiniLM.

This package depends only on ``powercontext.contract`` and third-party libraries, so the rest of the system
can use it without import cycles. The local model's modules import numpy and ``tokenizers`` (the
``embeddings`` extra) and are loaded only when that provider is built.
"""

from __future__ import annotations

from powercontext.inference.base import EmbeddingProvider, Vectors
from powercontext.inference.config import EmbeddingConfig, build_embedding_provider
from powercontext.inference.errors import EmbeddingConfigError, InferenceError, InferenceTimeout, InferenceUnavailable
from powercontext.inference.none import NoEmbeddings
from powercontext.inference.openai_compatible import OpenAICompatibleEmbeddings

__all__ = [
    "EmbeddingConfig",
    "EmbeddingConfigError",
    "EmbeddingProvider",
    "InferenceError",
    "InferenceTimeout",
    "InferenceUnavailable",
    "NoEmbeddings",
    "OpenAICompatibleEmbeddings",
    "Vectors",
    "build_embedding_provider",
]
