"""The embedding provider protocol."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt


class EmbeddingProvider(Protocol):
    name: str
    model_id: str
    dimension: int
    configured: bool

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...
    def close(self) -> None: ...
