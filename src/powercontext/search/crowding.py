"""Hubness reduction for the vector channel: a hit close to many of the other hits is generic, not specific.

A sentence embedding of a short text is dominated by what little it says. In a chat log every turn starts with
its speaker, so "Dmitri: lol" and "Dmitri: Wait, since when?" sit closer to any question about Dmitri (cosine
0.73) than the turn that answers it ("Dmitri: Robin proposed in the middle of a thunderstorm!", 0.46), and such
turns filled the top of nearly every hybrid list of the conversational suite. They are *hubs*: near many
queries and near each other. Cross-domain similarity local scaling (CSLS, Conneau et al., 2018) corrects for
it by discounting each candidate by how close it is to its own neighbourhood. Here the neighbourhood is the
channel's own list: a hit's *crowding* is the mean cosine to its ``NEIGHBOURS`` nearest other hits, read from
the stored embeddings, and fusion weighs the vector channel by ``cosine - WEIGHT * crowding``.

The relevance floor still judges the cosine itself, and a vector-only search still ranks by it: only what the
vector side brings to fusion changes. ``NEIGHBOURS`` and ``WEIGHT`` were chosen on replayed lists of both
evaluation suites (docs/evaluation.md, "Crowded hits"), not on labels of either alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]

NEIGHBOURS: Final = 10
WEIGHT: Final = 0.5


def crowding(vectors: Sequence[Vector | None], neighbours: int = NEIGHBOURS) -> list[float]:
    """Each vector's mean cosine to its ``neighbours`` nearest others in the list (vectors are unit length);
    0 for a missing vector, and for every one of a list too short to have a neighbourhood."""
    present = [i for i, v in enumerate(vectors) if v is not None]
    result = [0.0] * len(vectors)
    if len(present) < 3:
        return result
    matrix = np.stack([np.asarray(vectors[i], dtype=np.float32) for i in present])
    pairs = matrix @ matrix.T
    np.fill_diagonal(pairs, -np.inf)
    k = min(neighbours, len(present) - 1)
    nearest = np.sort(pairs, axis=1)[:, -k:]
    for i, value in zip(present, nearest.mean(axis=1), strict=True):
        result[i] = float(value)
    return result


def decrowded(cosines: Sequence[float], crowded: Sequence[float], weight: float = WEIGHT) -> list[float]:
    """What fusion weighs for each hit: its cosine less ``weight`` times its crowding."""
    return [c - weight * n for c, n in zip(cosines, crowded, strict=True)]
