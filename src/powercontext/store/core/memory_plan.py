"""The plan of an Atomic Memory batch, the same on every backend: which items replay a stored key, which repeat
a key of the same batch, and the records of the new ones (ids and fields), before anything is inserted.

Each store then inserts the new items its own way (SQLite row by row, OceanBase in multi-row statements); the
answer, item by item, is the plan's, so a replayed batch reads the same on both (``replayed`` included).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from powercontext.domain.identity import ArtifactKey
from powercontext.store.base import MemoryRecord, NewMemory
from powercontext.store.core.memory_rows import FAMILY, new_artifact_id
from powercontext.store.errors import IdempotencyConflict

# The stored memory an idempotency key already names (raising IdempotencyConflict for another body), or None.
StoredReplay = Callable[[NewMemory], MemoryRecord | None]


@dataclass(slots=True)
class BatchPlan:
    """``results`` line up with the batch's items; ``fresh`` are the items to insert, with their artifact ids."""

    results: list[MemoryRecord] = field(default_factory=list)
    fresh: list[tuple[NewMemory, str]] = field(default_factory=list)


def plan_batch(scope_id: str, items: Sequence[NewMemory], now: str, stored: StoredReplay) -> BatchPlan:
    """The batch's answer and its new items. A key already stored, or repeated within the batch with the same
    body, answers the memory it names with ``replayed``; with another body it is an ``IdempotencyConflict``."""
    plan = BatchPlan()
    in_batch: dict[str, tuple[str, int]] = {}  # idempotency key -> (request digest, position of its first item)
    for item in items:
        key = item.idempotency_key
        if key is not None:
            if key in in_batch:
                digest, position = in_batch[key]
                if digest != item.request_digest:
                    raise IdempotencyConflict()
                plan.results.append(dataclasses.replace(plan.results[position], replayed=True))
                continue
            replay = stored(item)
            if replay is not None:
                plan.results.append(dataclasses.replace(replay, replayed=True))
                continue
            in_batch[key] = (item.request_digest, len(plan.results))
        artifact_id = new_artifact_id()
        plan.fresh.append((item, artifact_id))
        record_key = ArtifactKey(scope_id, FAMILY, artifact_id, 1)
        plan.results.append(
            MemoryRecord(
                record_key, 1, "active", item.kind, item.text, item.tags, now, None, (), observed_at=item.observed_at
            )
        )
    return plan
