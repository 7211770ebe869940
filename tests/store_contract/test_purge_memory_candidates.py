"""Purges reach the review inbox on every backend: an Atomic Memory purge erases the Candidates that revise, merge
or wrote it; a Source purge those extracted from it, whatever their status. An erased Candidate shows ``[purged]``,
keeps its id, status and targets, and is refused on approval (``410 purged``, nothing written)."""

from __future__ import annotations

import pytest

from powercontext.store.base import NewMemory, Store
from powercontext.store.errors import CandidatePurged
from powercontext.store.source_records import (
    CreateMemory,
    ForgetMemory,
    MergeMemories,
    NewSource,
    ReviseMemory,
    SourceOperation,
    SourceOrigin,
    SourceStore,
)


def _propose(sources: SourceStore, content: str, operations: list[SourceOperation]) -> str:
    created = sources.create_source("s", NewSource("prompt", content, "digest", (), SourceOrigin(None, None, None)))
    (claim,) = sources.claim_sources("w", 60, 10, with_model=True)
    sources.propose_source(claim, operations)
    return created.ref.source_id


def test_purges_erase_the_candidates_they_concern_and_those_cannot_be_approved(store: Store) -> None:
    assert isinstance(store, SourceStore)
    sources = store
    store.create_scope("s", "S", [])
    m1, m2 = (r.key.artifact_id for r in store.create_memories("s", [NewMemory(t, "fact", ()) for t in ("a1", "a2")]))
    first = _propose(
        sources,
        "the first source",
        [
            ReviseMemory(m1, 1, "secret revise"),
            MergeMemories(((m1, 1), (m2, 1)), "secret merge", "fact"),
            ForgetMemory(m2, 1),
            CreateMemory("secret create", "fact", ("tagged",)),
        ],
    )
    second = _propose(sources, "the second source", [CreateMemory("stays", "fact")])
    by_text = {
        getattr(c.operation, "text", "forget"): c for _, c in sources.list_memory_candidates("s", None, None, 50)
    }
    create = sources.approve_memory_candidate("s", by_text["secret create"].candidate_id, None)
    assert create.result is not None

    store.purge_memory("s", m1)
    after = {c.candidate_id: c for _, c in sources.list_memory_candidates("s", None, None, 50)}
    for text in ("secret revise", "secret merge"):
        erased = after[by_text[text].candidate_id]
        assert erased.purged and erased.status == "pending" and erased.operation.text == "[purged]"
        with pytest.raises(CandidatePurged):
            sources.approve_memory_candidate("s", erased.candidate_id, None)
    assert after[by_text["secret merge"].candidate_id].operation == MergeMemories(
        ((m1, 1), (m2, 1)), "[purged]", "fact"
    )
    assert not after[by_text["forget"].candidate_id].purged  # it names m2 only
    assert after[create.candidate_id].operation.text == "secret create"

    store.purge_memory("s", m1)  # a second purge answers the same tombstone and changes nothing more
    sources.purge_source("s", first)
    after = {c.candidate_id: c for _, c in sources.list_memory_candidates("s", None, None, 50)}
    forget = after[by_text["forget"].candidate_id]
    assert forget.purged and forget.operation == ForgetMemory(m2, 1) and forget.source_id == first
    with pytest.raises(CandidatePurged):
        sources.approve_memory_candidate("s", forget.candidate_id, None)
    assert store.read_head("s", m2).state == "active"  # the refused forget wrote nothing
    approved = after[create.candidate_id]
    assert (approved.status, approved.result, approved.purged) == ("approved", create.result, True)
    assert approved.operation == CreateMemory("[purged]", "fact", ())
    other = after[by_text["stays"].candidate_id]
    assert (other.source_id, other.purged, other.operation.text) == (second, False, "stays")
    assert all(
        "secret" not in getattr(c.operation, "text", "") for _, c in sources.list_memory_candidates("s", None, None, 50)
    )
