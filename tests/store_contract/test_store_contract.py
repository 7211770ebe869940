"""The ``Store`` protocol contract, run against every backend in ``BACKENDS``."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

import pytest

from powercontext.domain.identity import ArtifactKey
from powercontext.store.base import MemoryEdit, MemoryMerge, NewMemory, ScopeEdit, Store
from powercontext.store.errors import (
    ArtifactNotFound,
    IdempotencyConflict,
    InvalidMerge,
    InvalidReference,
    NotActive,
    ReferencedScopeNotFound,
    RevisionConflict,
    RevisionNotFound,
    ScopeExists,
    ScopeNotFound,
)
from powercontext.text.tokenize import query_terms


def scope(store: Store, *refs: str) -> str:
    scope_id = f"s-{uuid.uuid4().hex[:12]}"
    store.create_scope(scope_id, "title", list(refs))
    return scope_id


def add(store: Store, scope_id: str, text: str, kind: str = "note", **kw: object) -> ArtifactKey:
    (record,) = store.create_memories(scope_id, [NewMemory(text, kind, tuple(kw.pop("tags", ())), **kw)])  # type: ignore[arg-type]
    return record.key


def hits(store: Store, scope_id: str, query: str, limit: int = 50) -> list[ArtifactKey]:
    return [h.record.key for h in store.search_text(scope_id, query_terms(query), limit)]


# -- scopes ------------------------------------------------------------------------------------


def test_scope_create_get_list_update(store: Store) -> None:
    ref = scope(store)
    created = store.create_scope("project:payments", "Payments", [ref])
    assert created.scope_id == "project:payments"
    got = store.get_scope("project:payments")
    assert (got.title, got.context_references) == ("Payments", (ref,))
    assert "project:payments" in [s.scope_id for s in store.list_scopes()]
    updated = store.update_scope("project:payments", ScopeEdit("Payments v2", ()))
    assert updated.created_at == created.created_at
    assert store.get_scope("project:payments").title == "Payments v2"
    assert store.get_scope("project:payments").context_references == ()


def test_scope_errors(store: Store) -> None:
    sid = scope(store)
    with pytest.raises(ScopeExists):
        store.create_scope(sid, "again", [])
    with pytest.raises(ScopeNotFound):
        store.get_scope("missing")
    with pytest.raises(ScopeNotFound):
        store.update_scope("missing", ScopeEdit("t", ()))
    with pytest.raises(ReferencedScopeNotFound):
        store.create_scope("with-bad-ref", "t", ["missing"])
    with pytest.raises(ScopeNotFound):
        store.get_scope("with-bad-ref")  # nothing was written
    with pytest.raises(InvalidReference):
        store.update_scope(sid, ScopeEdit("self", (sid,)))
    assert store.get_scope(sid).title == "title"


# -- writes and reads --------------------------------------------------------------------------


def test_create_then_read_head_and_revision(store: Store) -> None:
    sid = scope(store)
    key = add(store, sid, "We chose SQLite for the embedded store", "decision", tags=("db", "arch"))
    assert (key.scope_id, key.family, key.revision) == (sid, "atomic-memory", 1)
    head = store.read_head(sid, key.artifact_id)
    assert head.key == key
    assert (head.head_revision, head.state, head.kind) == (1, "active", "decision")
    assert head.text == "We chose SQLite for the embedded store"
    assert head.tags == ("db", "arch")
    assert store.read_revision(sid, key.artifact_id, 1) == head


def test_reads_of_missing_things(store: Store) -> None:
    sid = scope(store)
    key = add(store, sid, "present")
    with pytest.raises(ArtifactNotFound):
        store.read_head(sid, "am_missing")
    with pytest.raises(RevisionNotFound):
        store.read_revision(sid, key.artifact_id, 2)
    with pytest.raises(ScopeNotFound):
        store.read_head("missing", key.artifact_id)
    with pytest.raises(ScopeNotFound):
        store.create_memories("missing", [NewMemory("x", "note", ())])
    other = scope(store)
    with pytest.raises(ArtifactNotFound):  # ids are Scope-qualified: not visible from another Scope
        store.read_head(other, key.artifact_id)


def test_same_text_in_two_scopes_gives_two_scope_qualified_identities(store: Store) -> None:
    a, b = scope(store), scope(store)
    ka = add(store, a, "shared wording about deploys")
    kb = add(store, b, "shared wording about deploys")
    assert ka != kb
    assert (ka.scope_id, kb.scope_id) == (a, b)
    assert hits(store, a, "deploys") == [ka]
    assert hits(store, b, "deploys") == [kb]
    # Keys that differ only in scope_id are different identities.
    assert ArtifactKey(a, "atomic-memory", "am_x", 1) != ArtifactKey(b, "atomic-memory", "am_x", 1)
    assert ka.to_address().scope_id == a and ArtifactKey.from_address(ka.to_address()) == ka


def test_batch_is_one_transaction(store: Store) -> None:
    sid = scope(store)
    add(store, sid, "first body", idempotency_key="k1", request_digest="d1")
    batch = [
        NewMemory("batchword one", "note", ()),
        NewMemory("batchword two", "note", ()),
        NewMemory("different body", "note", (), idempotency_key="k1", request_digest="d2"),
    ]
    with pytest.raises(IdempotencyConflict):
        store.create_memories(sid, batch)
    assert hits(store, sid, "batchword") == []
    records = store.create_memories(sid, batch[:2])
    assert [r.text for r in records] == ["batchword one", "batchword two"]
    assert len({r.key for r in records}) == 2
    assert sorted(hits(store, sid, "batchword"), key=str) == sorted((r.key for r in records), key=str)


def test_idempotency_replay_and_conflict(store: Store) -> None:
    sid, other = scope(store), scope(store)
    first = add(store, sid, "idem body", idempotency_key="key-1", request_digest="digest-a")
    again = add(store, sid, "idem body", idempotency_key="key-1", request_digest="digest-a")
    assert again == first
    with pytest.raises(IdempotencyConflict):
        add(store, sid, "another body", idempotency_key="key-1", request_digest="digest-b")
    assert hits(store, sid, "another") == []
    assert hits(store, sid, "idem") == [first]
    # Keys are per Scope.
    elsewhere = add(store, other, "idem body", idempotency_key="key-1", request_digest="digest-a")
    assert elsewhere.scope_id == other and elsewhere.artifact_id != first.artifact_id
    # Within one batch the second use of a key replays the first.
    dup = NewMemory("batch idem", "note", (), idempotency_key="key-2", request_digest="d")
    r1, r2 = store.create_memories(sid, [dup, dup])
    assert r1.key == r2.key
    assert (r1.replayed, r2.replayed) == (False, True)
    # A batch sent again answers, item by item, which items were already stored (issue 39: seekdb said none).
    plain = NewMemory("batch unkeyed", "note", ())
    again = store.create_memories(sid, [dup, plain])
    assert [r.replayed for r in again] == [True, False] and again[0].key == r1.key
    # ...and a second use with another body conflicts, writing nothing of the batch.
    clash = NewMemory("clashword other body", "note", (), idempotency_key="key-3", request_digest="e")
    with pytest.raises(IdempotencyConflict):
        store.create_memories(
            sid, [NewMemory("clashword", "note", (), idempotency_key="key-3", request_digest="d"), clash]
        )
    assert hits(store, sid, "clashword") == []


def test_revise_with_expected_revision(store: Store) -> None:
    sid = scope(store)
    key = add(store, sid, "alphaword original", "fact", tags=("t1",))
    revised = store.revise_memory(sid, key.artifact_id, 1, MemoryEdit("betaword revised"))
    assert revised.key == ArtifactKey(sid, "atomic-memory", key.artifact_id, 2)
    assert (revised.kind, revised.tags, revised.head_revision) == ("fact", ("t1",), 2)
    with pytest.raises(RevisionConflict):
        store.revise_memory(sid, key.artifact_id, 1, MemoryEdit("stale write"))
    assert store.read_head(sid, key.artifact_id).text == "betaword revised"
    old = store.read_revision(sid, key.artifact_id, 1)
    assert (old.key.revision, old.text, old.head_revision) == (1, "alphaword original", 2)
    # Only the active head is searchable; the superseded revision is not.
    assert hits(store, sid, "alphaword") == []
    assert hits(store, sid, "betaword") == [revised.key]
    third = store.revise_memory(sid, key.artifact_id, 2, MemoryEdit("gammaword", "decision", ("x", "y")))
    assert (third.kind, third.tags) == ("decision", ("x", "y"))


def test_lifecycle_rules(store: Store) -> None:
    sid = scope(store)
    key = add(store, sid, "lifecycleword body")
    aid = key.artifact_id
    forgotten = store.change_lifecycle(sid, aid, "forget", None)
    assert (forgotten.state, forgotten.key) == ("forgotten", key)
    assert hits(store, sid, "lifecycleword") == []
    with pytest.raises(NotActive):
        store.change_lifecycle(sid, aid, "forget", None)
    with pytest.raises(NotActive):
        store.revise_memory(sid, aid, 1, MemoryEdit("cannot revise"))
    assert store.change_lifecycle(sid, aid, "restore", None).state == "active"
    assert hits(store, sid, "lifecycleword") == [key]
    with pytest.raises(RevisionConflict):
        store.change_lifecycle(sid, aid, "retire", 7)
    assert store.read_head(sid, aid).state == "active"
    assert store.change_lifecycle(sid, aid, "retire", 1).state == "retired"
    assert hits(store, sid, "lifecycleword") == []
    for action in ("forget", "retire", "restore"):
        with pytest.raises(NotActive):
            store.change_lifecycle(sid, aid, action, None)  # type: ignore[arg-type]
    exact = store.read_revision(sid, aid, 1)
    assert (exact.key, exact.text, exact.state) == (key, "lifecycleword body", "retired")


def test_retire_from_forgotten(store: Store) -> None:
    sid = scope(store)
    key = add(store, sid, "soon retired")
    store.change_lifecycle(sid, key.artifact_id, "forget", None)
    assert store.change_lifecycle(sid, key.artifact_id, "retire", None).state == "retired"


def test_merge_rules(store: Store) -> None:
    sid = scope(store)
    a = add(store, sid, "mergeword source a")
    b = add(store, sid, "mergeword source b")
    b2 = store.revise_memory(sid, b.artifact_id, 1, MemoryEdit("mergeword source b revised")).key
    merged = store.merge_memories(
        sid, MemoryMerge(((a.artifact_id, 1), (b.artifact_id, 2)), "merged result", "decision", ("m",))
    )
    assert merged.key.scope_id == sid and merged.key.revision == 1
    assert merged.key.artifact_id not in (a.artifact_id, b.artifact_id)
    assert merged.merged_from == (a, b2)
    assert store.read_head(sid, merged.key.artifact_id).merged_from == (a, b2)
    for src in (a, b2):
        head = store.read_head(sid, src.artifact_id)
        assert (head.state, head.merged_into) == ("merged", merged.key.artifact_id)
        # The exact read is the recorded revision, not the merge target.
        exact = store.read_revision(sid, src.artifact_id, src.revision)
        assert exact.key == src and exact.text.startswith("mergeword source")
    assert hits(store, sid, "mergeword") == []
    assert hits(store, sid, "merged result") == [merged.key]
    with pytest.raises(NotActive):
        store.merge_memories(sid, MemoryMerge(((a.artifact_id, 1), (merged.key.artifact_id, 1)), "again", "note", ()))


def test_merge_refusals_write_nothing(store: Store) -> None:
    sid = scope(store)
    a = add(store, sid, "refusalword a")
    b = add(store, sid, "refusalword b")
    with pytest.raises(RevisionConflict):
        store.merge_memories(sid, MemoryMerge(((a.artifact_id, 1), (b.artifact_id, 2)), "nope result", "note", ()))
    with pytest.raises(InvalidMerge):
        store.merge_memories(sid, MemoryMerge(((a.artifact_id, 1), (a.artifact_id, 1)), "nope result", "note", ()))
    with pytest.raises(ArtifactNotFound):
        store.merge_memories(sid, MemoryMerge(((a.artifact_id, 1), ("am_missing", 1)), "nope result", "note", ()))
    with pytest.raises(ScopeNotFound):
        store.merge_memories(
            "missing", MemoryMerge(((a.artifact_id, 1), (b.artifact_id, 1)), "nope result", "note", ())
        )
    assert store.read_head(sid, a.artifact_id).state == "active"
    assert store.read_head(sid, b.artifact_id).state == "active"
    assert hits(store, sid, "nope") == []
    assert sorted(hits(store, sid, "refusalword"), key=str) == sorted([a, b], key=str)


# -- search ------------------------------------------------------------------------------------


def test_search_only_over_active_heads_in_one_scope(store: Store) -> None:
    sid, other = scope(store), scope(store)
    active = add(store, sid, "searchword active")
    forgotten = add(store, sid, "searchword forgotten")
    retired = add(store, sid, "searchword retired")
    revised = add(store, sid, "searchword old text")
    m1, m2 = add(store, sid, "searchword m1"), add(store, sid, "searchword m2")
    add(store, other, "searchword elsewhere")
    store.change_lifecycle(sid, forgotten.artifact_id, "forget", None)
    store.change_lifecycle(sid, retired.artifact_id, "retire", None)
    new_head = store.revise_memory(sid, revised.artifact_id, 1, MemoryEdit("searchword new text")).key
    merged = store.merge_memories(
        sid, MemoryMerge(((m1.artifact_id, 1), (m2.artifact_id, 1)), "searchword merged", "note", ())
    ).key
    found = hits(store, sid, "searchword")
    assert sorted(found, key=str) == sorted([active, new_head, merged], key=str)
    scored = store.search_text(sid, query_terms("searchword"), 50)
    assert all(h.record.state == "active" and h.record.key.revision == h.record.head_revision for h in scored)


@pytest.mark.parametrize("change", ["forget", "retire", "revise", "merge"])
def test_removing_one_head_keeps_other_memories_with_the_same_words_searchable(store: Store, change: str) -> None:
    sid = scope(store)
    gone = add(store, sid, "sharedterm rollout on friday")
    kept = add(store, sid, "sharedterm rollout on monday")
    third = add(store, sid, "unrelated words entirely")
    if change in ("forget", "retire"):
        store.change_lifecycle(sid, gone.artifact_id, change, None)  # type: ignore[arg-type]
        expected = [kept]
    elif change == "revise":
        store.revise_memory(sid, gone.artifact_id, 1, MemoryEdit("completely different text"))
        expected = [kept]
    else:
        merged = store.merge_memories(
            sid, MemoryMerge(((gone.artifact_id, 1), (third.artifact_id, 1)), "merged body", "note", ())
        )
        assert hits(store, sid, "merged") == [merged.key]
        expected = [kept]
    assert hits(store, sid, "sharedterm") == expected
    assert hits(store, sid, "rollout") == expected
    assert hits(store, sid, "monday") == expected


def test_revising_a_memory_keeps_words_shared_by_old_and_new_text(store: Store) -> None:
    sid = scope(store)
    a = add(store, sid, "keepword alpha")
    b = add(store, sid, "keepword beta")
    a2 = store.revise_memory(sid, a.artifact_id, 1, MemoryEdit("keepword alpha revised")).key
    assert sorted(hits(store, sid, "keepword"), key=str) == sorted([a2, b], key=str)
    store.change_lifecycle(sid, b.artifact_id, "forget", None)
    assert hits(store, sid, "keepword") == [a2]


def test_restore_makes_a_memory_searchable_again_by_every_word(store: Store) -> None:
    sid = scope(store)
    a = add(store, sid, "restoreword one")
    b = add(store, sid, "restoreword two")
    store.change_lifecycle(sid, a.artifact_id, "forget", None)
    store.change_lifecycle(sid, a.artifact_id, "restore", None)
    assert sorted(hits(store, sid, "restoreword"), key=str) == sorted([a, b], key=str)
    assert hits(store, sid, "one") == [a]


def test_search_ranking_limit_and_empty_terms(store: Store) -> None:
    sid = scope(store)
    strong = add(store, sid, "sqlite sqlite sqlite embedded")
    weak = add(store, sid, "a long memory about many unrelated topics that mentions sqlite once " * 3)
    for i in range(5):
        add(store, sid, f"filler sqlite {i} " + "padding words " * 20)
    scored = store.search_text(sid, query_terms("sqlite"), 50)
    assert scored[0].record.key == strong
    assert [h.score for h in scored] == sorted((h.score for h in scored), reverse=True)
    assert weak in [h.record.key for h in scored]
    assert len(store.search_text(sid, query_terms("sqlite"), 3)) == 3
    assert store.search_text(sid, [], 10) == []
    assert hits(store, sid, "nonexistentword") == []


def test_search_stems_and_cjk(store: Store) -> None:
    sid = scope(store)
    deploy = add(store, sid, "We deploy on Fridays")
    cjk = add(store, sid, "我们决定把数据迁移到新的集群")
    assert hits(store, sid, "deployment") == [deploy]
    assert hits(store, sid, "DEPLOYING") == [deploy]
    assert hits(store, sid, "数据") == [cjk]
    assert hits(store, sid, "集群") == [cjk]
    assert hits(store, sid, "集合") == []  # a bigram that is not in the sentence


def test_quotes_and_fts_syntax_in_text_are_plain_terms(store: Store) -> None:
    sid = scope(store)
    key = add(store, sid, 'AND OR NOT NEAR "quoted" col:umn * ^start')
    assert hits(store, sid, 'NEAR "quoted"') == [key]
    assert hits(store, sid, "col:umn") == [key]
    assert hits(store, sid, "*") == []


def test_concurrent_writes_all_land(store: Store) -> None:
    sid = scope(store)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(25):
                add(store, sid, f"concurrentword writer {n} item {i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(hits(store, sid, "concurrentword", limit=500)) == 200


def test_reopen_keeps_data(open_store: Callable[[], Store]) -> None:
    first = open_store()
    sid = scope(first)
    key = add(first, sid, "persisted memory")
    first.close()
    second = open_store()
    assert second.ready()
    assert second.read_head(sid, key.artifact_id).text == "persisted memory"
    assert hits(second, sid, "persisted") == [key]


def test_observed_at_is_kept_per_revision(store: Store) -> None:
    store.create_scope("obs", "t", [])
    given = "2024-11-02T08:00:00.000Z"
    items = [NewMemory(f"deploy note {n}", "fact", (), observed_at=given) for n in range(4)]
    items.append(NewMemory("deploy note now", "fact", ()))
    created = store.create_memories("obs", items)
    assert [r.observed_at for r in created[:4]] == [given] * 4
    assert created[4].observed == created[4].created_at
    for record in created:
        head = store.read_head("obs", record.key.artifact_id)
        assert head.observed == record.observed
    revised = store.revise_memory("obs", created[0].key.artifact_id, 1, MemoryEdit("deploy note revised"))
    assert revised.observed == revised.created_at  # a revision states something as of when it is written
    assert store.read_revision("obs", created[0].key.artifact_id, 1).observed == given


def test_memories_holding_rare_terms_rarest_first_then_latest(store: Store) -> None:
    sid, other = scope(store), scope(store)
    common = [add(store, sid, f"holdcommon filler number {i}") for i in range(4)]
    older = add(store, sid, "holdrare holdcommon first statement")
    newer = add(store, sid, "holdrare second statement")
    both = add(store, sid, "holdrare holdrarest third statement")
    retired = add(store, sid, "holdrarest retired statement")
    add(store, other, "holdrare holdrarest in another scope")
    store.change_lifecycle(sid, retired.artifact_id, "retire", None)
    found = [r.key for r in store.memories_holding(sid, query_terms("holdrare holdrarest holdcommon"), 50)]
    # The rarer terms a memory holds add up first; memories holding the same ones come latest written first.
    assert found[:3] == [both, older, newer]
    assert sorted(found[3:], key=str) == sorted(common, key=str)
    assert retired not in found
    assert [r.key for r in store.memories_holding(sid, query_terms("holdrare"), 2)] == [both, newer]
    assert store.memories_holding(sid, query_terms("nowhere"), 5) == []
    assert store.memories_holding(sid, [], 5) == []
