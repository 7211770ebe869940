"""Inference failures, each with one stable ``reason`` the caller can report or degrade on.

Messages are content-free by contract: they never carry input texts, response bodies, vectors, URLs or keys,
because callers log them and may surface them in Receipts.
"""

from __future__ import annotations

from typing import Literal


class InferenceError(Exception):
    """Base class of every failure an embedding provider may raise from ``embed``."""

    reason: Literal["inference_unavailable", "inference_timeout"] = "inference_unavailable"


class InferenceUnavailable(InferenceError):
    """No usable answer: not configured, refused connection, non-2xx status, or a malformed payload."""

    reason = "inference_unavailable"


class InferenceTimeout(InferenceError):
    """The provider did not answer within the configured per-call timeout."""

    reason = "inference_timeout"


class EmbeddingConfigError(ValueError):
    """A configuration a person must fix; the message names the setting and what is expected."""
