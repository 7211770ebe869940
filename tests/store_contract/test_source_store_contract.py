"""``SourceStore`` on every backend: capture, leases as fencing tokens, one-transaction apply, lineage, deferral."""

from __future__ import annotations

import time

import pytest

from powercontext.store.base import NewMemory, Store
from powercontext.store.errors import RevisionConflict, SourceLeaseLost
from powercontext.store.source_records import (
    WAITING_FOR_MODEL,
    CreateMemory,
    ForgetMemory,
    NewSource,
    ReviseMemory,
    SourceOrigin,
    SourceStore,
)


def _sources(store: Store) -> SourceStore:
    assert isinstance(store, SourceStore)
    return store


def _new(content: str) -> NewSource:
    return NewSource("prompt", content, "digest", (("AWS Access Key", 1),), SourceOrigin("codex", "s-1", 2))


LEASE_S = 1.0


def test_a_lease_is_held_by_one_worker_and_a_stale_claim_applies_nothing(store: Store) -> None:
    sources = _sources(store)
    store.create_scope("s", "S", [])
    created = sources.create_source("s", _new("remember: a"))
    assert created.status == "pending" and created.redactions == (("AWS Access Key", 1),)
    # A lease long enough to be held at the next claim on a loaded machine (50 ms once expired in between).
    claimed_at = time.monotonic()
    (first,) = sources.claim_sources("worker-a", LEASE_S, 10, with_model=False)
    assert first.record.attempts == 1 and first.record.ref.origin == SourceOrigin("codex", "s-1", 2)
    assert sources.claim_sources("worker-b", 60, 10, with_model=False) == []  # held
    time.sleep(max(0.0, claimed_at + LEASE_S + 0.1 - time.monotonic()))  # expired: another worker takes over
    (second,) = sources.claim_sources("worker-b", 60, 10, with_model=False)
    with pytest.raises(SourceLeaseLost):
        sources.finish_source(first, [CreateMemory("A", "fact")], "done")
    done = sources.finish_source(second, [CreateMemory("A", "fact")], "done")
    assert done.status == "done" and len(done.writes) == 1
    with pytest.raises(SourceLeaseLost):  # finished: a rerun writes nothing twice
        sources.finish_source(second, [CreateMemory("A", "fact")], "done")
    assert [r.text for _, r in store.list_memories("s", "active", None, 10)] == ["A"]
    refs = sources.source_refs([done.writes[0]])[done.writes[0]]
    assert [r.source_id for r in refs] == [created.ref.source_id]


def test_operations_apply_all_or_nothing_with_lineage_on_each_revision(store: Store) -> None:
    sources = _sources(store)
    store.create_scope("s", "S", [])
    first = sources.create_source("s", _new("remember: deploys are on Tuesdays"))
    (claim,) = sources.claim_sources("w", 60, 10, with_model=True)
    (key,) = sources.finish_source(claim, [CreateMemory("Deploys are on Tuesdays", "fact")], "done").writes
    second = sources.create_source("s", _new("deploys moved to Thursdays"))
    other = store.create_memories("s", [NewMemory("stale fact", "fact", ())])[0]
    (claim,) = sources.claim_sources("w", 60, 10, with_model=True)
    bad = [ReviseMemory(key.artifact_id, 1, "Deploys are on Thursdays"), ForgetMemory(other.key.artifact_id, 7)]
    with pytest.raises(RevisionConflict):
        sources.finish_source(claim, bad, "done")
    assert store.read_head("s", key.artifact_id).key.revision == 1  # the revise was rolled back with the forget
    good = [ReviseMemory(key.artifact_id, 1, "Deploys are on Thursdays"), ForgetMemory(other.key.artifact_id, 1)]
    finished = sources.finish_source(claim, good, "done")
    (revised,) = finished.writes
    assert revised.revision == 2 and store.read_head("s", other.key.artifact_id).state == "forgotten"
    lineage = sources.source_refs([key, revised])
    assert [r.source_id for r in lineage[key]] == [first.ref.source_id]
    assert [r.source_id for r in lineage[revised]] == [first.ref.source_id, second.ref.source_id]
    assert store.read_revision("s", key.artifact_id, 2).observed == second.ref.observed_at


def test_deferred_sources_wait_for_their_time_or_for_a_model(store: Store) -> None:
    sources = _sources(store)
    store.create_scope("s", "S", [])
    sources.create_source("s", _new("just chatting"))
    (claim,) = sources.claim_sources("w", 60, 10, with_model=False)
    waiting = sources.defer_source(claim, WAITING_FOR_MODEL, None, give_up=False)
    assert (waiting.status, waiting.reason) == ("pending", WAITING_FOR_MODEL)
    assert sources.claim_sources("w", 60, 10, with_model=False) == []  # only a model can read it
    assert sources.pending_sources() == {"s": 1}
    (claim,) = sources.claim_sources("w", 60, 10, with_model=True)
    later = sources.defer_source(claim, "provider-timeout", "2999-01-01T00:00:00.000Z", give_up=False)
    assert later.reason == "provider-timeout" and sources.claim_sources("w", 60, 10, with_model=True) == []
    page = sources.list_sources("s", None, 10)
    assert [r.ref.source_id for _, r in page] == [later.ref.source_id]
