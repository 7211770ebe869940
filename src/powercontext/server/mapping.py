"""Store records to wire models, and wire requests to store inputs."""

from __future__ import annotations

import hashlib
import json
from typing import Any, Protocol

from pydantic import BaseModel

from powercontext.contract.memory import (
    AtomicMemory,
    AtomicMemoryBatchItem,
    AtomicMemoryCreate,
    AtomicMemoryHit,
    PurgedArtifactView,
)
from powercontext.contract.scopes import Scope
from powercontext.domain.identity import ArtifactKey
from powercontext.store.base import MemoryRecord, NewMemory, ScopeRecord, ScoredMemory
from powercontext.store.removal import PurgedArtifact


def scope_view(record: ScopeRecord) -> Scope:
    """The wire Scope has exactly the record's fields, read by name (the references' tuple becomes a list)."""
    return Scope.model_validate(record, from_attributes=True)


class ArtifactHead(Protocol):
    """An exact Artifact revision with its Artifact's current head revision and state (any family's record)."""

    @property
    def key(self) -> ArtifactKey: ...
    @property
    def head_revision(self) -> int: ...
    @property
    def state(self) -> str: ...


def head_fields(record: ArtifactHead) -> dict[str, Any]:
    """The fields every Artifact view shares: the revision's exact address, the head revision and the state."""
    return {"artifact_address": record.key.to_address(), "head_revision": record.head_revision, "state": record.state}


def _memory_fields(record: MemoryRecord) -> dict[str, Any]:
    return {
        **head_fields(record),
        "kind": record.kind,
        "text": record.text,
        "tags": list(record.tags),
        "created_at": record.created_at,
        "observed_at": record.observed,
        "merged_into": record.merged_into,
        "merged_from": [k.to_address() for k in record.merged_from],
    }


def memory_view(record: MemoryRecord) -> AtomicMemory:
    return AtomicMemory(**_memory_fields(record))


def batch_item_view(record: MemoryRecord) -> AtomicMemoryBatchItem:
    """A batch answer's item: the Atomic Memory and whether it was a replay (validated once, not twice)."""
    return AtomicMemoryBatchItem(**_memory_fields(record), replayed=record.replayed)


def hit_view(hit: ScoredMemory) -> AtomicMemoryHit:
    record = hit.record
    return AtomicMemoryHit(
        artifact_address=record.key.to_address(),
        kind=record.kind,
        text=record.text,
        tags=list(record.tags),
        score=hit.score,
    )


def request_digest(item: BaseModel, *, unset: frozenset[str] = frozenset()) -> str:
    """Digest of a create request without its ``idempotency_key``: what a replay must repeat exactly.

    Fields named in ``unset`` are left out when they are None, so a field added later does not change the
    digests of requests stored before it existed."""
    absent = {name for name in unset if getattr(item, name) is None}
    body = item.model_dump(mode="json", exclude={"idempotency_key", *absent})
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def new_memory(item: AtomicMemoryCreate) -> NewMemory:
    digest = request_digest(item, unset=frozenset({"observed_at"}))
    return NewMemory(item.text, item.kind, tuple(item.tags), item.idempotency_key, digest, observed_at=item.observed_at)


def purged_view(purged: PurgedArtifact) -> PurgedArtifactView:
    """A purge's answer: the tombstone left in place of the erased text."""
    key = purged.key
    family = key.family
    assert family in ("atomic-memory", "topic-memory", "experience")
    return PurgedArtifactView(
        scope_id=key.scope_id,
        family=family,
        artifact_id=key.artifact_id,
        revisions=purged.revisions,
        purged_at=purged.purged_at,
    )
