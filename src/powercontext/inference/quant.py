"""The int8 weight format of the packaged model, and its dequantisation to float32.

A matrix ``W`` (rows x cols) is stored as ``q`` (int8, -127..127), ``scale`` (float32, rows x groups) and ``col``
(float32, cols): ``W ~= q * scale`` with one scale per row per group of ``cols / groups`` adjacent columns,
then times ``col`` per column. ``tools/convert_minilm.py`` writes it and says why it has this shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

F32 = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Int8Matrix:
    q: npt.NDArray[np.int8]
    scale: F32  # (rows, groups)
    col: F32  # (cols,)

    def __post_init__(self) -> None:
        rows, cols = self.q.shape
        groups_fit = self.scale.ndim == 2 and self.scale.shape[0] == rows and cols % self.scale.shape[1] == 0
        if not groups_fit or self.col.shape != (cols,):
            raise ValueError("int8 matrix parts have inconsistent shapes")

    @property
    def shape(self) -> tuple[int, int]:
        rows, cols = self.q.shape
        return int(rows), int(cols)

    def dequantise(self) -> F32:
        return _expand(self.q, self.scale, self.col)

    def rows(self, ids: npt.NDArray[np.int64]) -> F32:
        """Float32 rows ``ids`` (any shape) without expanding the rest: the lookup of an embedding table."""
        return _expand(self.q[ids], self.scale[ids], self.col)


def _expand(q: npt.NDArray[np.int8], scale: F32, col: F32) -> F32:
    groups = scale.shape[-1]
    out = q.astype(np.float32).reshape(*q.shape[:-1], groups, -1)
    out *= scale[..., None]
    out = out.reshape(q.shape)
    out *= col
    return out
