"""The embedding provider interface every backend implements, and the shared row normalisation."""

from __future__ import annotations

import contextlib
import ctypes
import sys
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from powercontext.inference.errors import InferenceUnavailable

Vectors = npt.NDArray[np.float32]


class EmbeddingProvider(Protocol):
    """Turns texts into unit-length float32 vectors.

    ``model_id`` is stored next to every vector, so vectors from different models (or different conversions
    of one model) are never compared with each other.
    """

    name: str  # "none" | "openai-compatible" | "local"
    model_id: str  # "" for the none provider
    dimension: int  # 0 for the none provider
    configured: bool  # False only for the none provider

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Shape ``(len(texts), dimension)``, float32, every row L2-normalised.

        Raises only ``InferenceError`` subclasses.
        """
        ...

    def call_budget_s(self, count: int) -> float | None:
        """The longest an ``embed`` of ``count`` texts may take before it fails with ``InferenceTimeout``.

        ``None`` when no deadline applies (local computation, or no provider at all).
        """
        ...

    def close(self) -> None:
        """Release connections or memory; the provider is not used afterwards."""
        ...


def l2_normalise(rows: npt.NDArray[np.floating]) -> Vectors:
    """Rows scaled to unit length, computed in float64 so float32 inputs near the limits do not overflow.

    A zero or non-finite row has no direction; that is a bad payload, not something to paper over.
    """
    wide: npt.NDArray[np.float64] = np.asarray(rows, dtype=np.float64)
    norms: npt.NDArray[np.float64] = np.linalg.norm(wide, axis=1, keepdims=True)
    if not (np.all(np.isfinite(norms)) and np.all(norms > 0.0)):
        raise InferenceUnavailable("the embedding has a zero-length or non-finite vector")
    unit: Vectors = (wide / norms).astype(np.float32)
    return unit


def release_freed_heap() -> None:
    """Hand the C heap's free pages back to the operating system (glibc's ``malloc_trim``; elsewhere nothing).

    A local model frees large buffers glibc otherwise keeps mapped: the float32 copies its compiled runtime was
    built from, a bulk call's activations. Costs about a millisecond, so it follows loads and bulk calls only.
    """
    if not sys.platform.startswith("linux"):
        return
    # On musl or another libc there is no malloc_trim: the memory is merely kept for reuse.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
