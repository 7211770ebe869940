"""The two classes every provider failure maps to (RFC 1435 fallback reasons)."""

from __future__ import annotations

from typing import ClassVar, Literal


class InferenceError(Exception):
    reason: ClassVar[Literal["inference_unavailable", "inference_timeout"]]


class InferenceUnavailable(InferenceError):
    reason = "inference_unavailable"


class InferenceTimeout(InferenceError):
    reason = "inference_timeout"
