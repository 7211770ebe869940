"""The ``FamilyStore`` contract (Topic Memory, Experience, Profile), run against every backend in ``BACKENDS``."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any, Protocol

import pytest

from powercontext.domain.identity import ArtifactKey
from powercontext.store.base import (
    ExperienceContent,
    ExperienceDraft,
    FamilyStore,
    NewMemory,
    NewTopic,
    ProfileEntry,
    Store,
    TopicEdit,
)
from powercontext.store.errors import (
    ArtifactNotFound,
    CandidateNotFound,
    CandidateNotPending,
    CandidateRevisionConflict,
    IdempotencyConflict,
    NotActive,
    ProfileNotFound,
    RevisionConflict,
    RevisionNotFound,
    ScopeNotFound,
)
from powercontext.text.tokenize import query_terms


class Both(Store, FamilyStore, Protocol):
    """For type checking only: a backend here implements both protocols."""


@pytest.fixture
def fs(store: Store) -> Both:
    assert isinstance(store, FamilyStore), "every backend under contract implements FamilyStore"
    return store  # type: ignore[return-value]


def scope(store: Store) -> str:
    scope_id = f"s-{uuid.uuid4().hex[:12]}"
    store.create_scope(scope_id, "title", [])
    return scope_id


def topic(fs: Both, sid: str, title: str, body: str, *tags: str, **kw: Any) -> ArtifactKey:
    return fs.create_topic(sid, NewTopic(title, body, tags, **kw)).key


def topic_hits(fs: Both, sid: str, query: str, limit: int = 50) -> list[ArtifactKey]:
    return [h.record.key for h in fs.search_topics(sid, query_terms(query), limit)]


def draft(situation: str, worked: str = "w", avoid: str = "a", *tags: str, **kw: Any) -> ExperienceDraft:
    return ExperienceDraft(ExperienceContent(situation, worked, avoid), tags, **kw)


def experience(fs: Both, sid: str, situation: str, **kw: Any) -> ArtifactKey:
    candidate = fs.propose_experience(sid, draft(situation, **kw))
    _, record = fs.approve_candidate(sid, candidate.candidate_id, None)
    return record.key


def exp_hits(fs: Both, sid: str, query: str, limit: int = 50) -> list[ArtifactKey]:
    return [h.record.key for h in fs.search_experiences(sid, query_terms(query), limit)]


def memory_hits(fs: Both, sid: str, query: str) -> list[ArtifactKey]:
    return [h.record.key for h in fs.search_text(sid, query_terms(query), 50)]


# -- topic memory ------------------------------------------------------------------------------


def test_topic_create_read_head_and_revision(fs: Both) -> None:
    sid = scope(fs)
    created = fs.create_topic(sid, NewTopic("Deploy pipeline", "Blue-green on Tuesdays.", ("ops", "ci")))
    key = created.key
    assert (key.scope_id, key.family, key.revision) == (sid, "topic-memory", 1)
    assert key.artifact_id.startswith("tm_") and len(key.artifact_id) == 29
    head = fs.read_topic_head(sid, key.artifact_id)
    assert head == created
    assert (head.head_revision, head.state, head.title, head.body, head.tags) == (
        1,
        "active",
        "Deploy pipeline",
        "Blue-green on Tuesdays.",
        ("ops", "ci"),
    )
    assert head.render_text() == "Deploy pipeline\n\nBlue-green on Tuesdays."
    assert fs.read_topic_revision(sid, key.artifact_id, 1) == head


def test_topic_revise_is_compare_and_swap_and_keeps_history(fs: Both) -> None:
    sid = scope(fs)
    key = topic(fs, sid, "Release train", "alphaword cadence", "t1")
    revised = fs.revise_topic(sid, key.artifact_id, 1, TopicEdit(body="betaword cadence"))
    assert revised.key == ArtifactKey(sid, "topic-memory", key.artifact_id, 2)
    assert (revised.title, revised.tags, revised.head_revision) == ("Release train", ("t1",), 2)
    with pytest.raises(RevisionConflict):
        fs.revise_topic(sid, key.artifact_id, 1, TopicEdit(title="stale"))
    assert fs.read_topic_head(sid, key.artifact_id).body == "betaword cadence"
    old = fs.read_topic_revision(sid, key.artifact_id, 1)
    assert (old.key.revision, old.body, old.head_revision) == (1, "alphaword cadence", 2)
    assert topic_hits(fs, sid, "alphaword") == []
    assert topic_hits(fs, sid, "betaword") == [revised.key]
    third = fs.revise_topic(sid, key.artifact_id, 2, TopicEdit(title="Renamed train", tags=()))
    assert (third.title, third.body, third.tags) == ("Renamed train", "betaword cadence", ())
    assert topic_hits(fs, sid, "renamed") == [third.key]
    assert topic_hits(fs, sid, "release") == []


def test_topic_retire_restore_and_exact_reads_after_retire(fs: Both) -> None:
    sid = scope(fs)
    key = topic(fs, sid, "Lifecycleword topic", "body text")
    aid = key.artifact_id
    with pytest.raises(RevisionConflict):
        fs.change_topic_lifecycle(sid, aid, "retire", 2)
    retired = fs.change_topic_lifecycle(sid, aid, "retire", 1)
    assert (retired.state, retired.key) == ("retired", key)
    assert topic_hits(fs, sid, "lifecycleword") == []
    exact = fs.read_topic_revision(sid, aid, 1)
    assert (exact.state, exact.title) == ("retired", "Lifecycleword topic")
    with pytest.raises(NotActive):
        fs.change_topic_lifecycle(sid, aid, "retire", None)
    with pytest.raises(NotActive):
        fs.revise_topic(sid, aid, 1, TopicEdit(title="no"))
    assert fs.change_topic_lifecycle(sid, aid, "restore", None).state == "active"
    assert topic_hits(fs, sid, "lifecycleword") == [key]
    with pytest.raises(NotActive):
        fs.change_topic_lifecycle(sid, aid, "restore", None)


def test_topic_idempotency(fs: Both) -> None:
    sid, other = scope(fs), scope(fs)
    first = topic(fs, sid, "Idem", "idem body", idempotency_key="k1", request_digest="d1")
    assert topic(fs, sid, "Idem", "idem body", idempotency_key="k1", request_digest="d1") == first
    with pytest.raises(IdempotencyConflict):
        topic(fs, sid, "Idem", "other body", idempotency_key="k1", request_digest="d2")
    assert topic_hits(fs, sid, "idem") == [first]
    elsewhere = topic(fs, other, "Idem", "idem body", idempotency_key="k1", request_digest="d1")
    assert elsewhere.scope_id == other and elsewhere.artifact_id != first.artifact_id


def test_an_idempotency_key_never_replays_another_familys_artifact(fs: Both) -> None:
    sid = scope(fs)
    (memory,) = fs.create_memories(sid, [NewMemory("memory body", "note", (), "shared", "same-digest")])
    with pytest.raises(IdempotencyConflict):
        topic(fs, sid, "T", "topic body", idempotency_key="shared", request_digest="same-digest")
    topic(fs, sid, "T", "topic body", idempotency_key="topic-key", request_digest="same-digest")
    with pytest.raises(IdempotencyConflict):
        fs.create_memories(sid, [NewMemory("memory body", "note", (), "topic-key", "same-digest")])
    assert fs.read_head(sid, memory.key.artifact_id).text == "memory body"


def test_topic_missing_things(fs: Both) -> None:
    sid = scope(fs)
    key = topic(fs, sid, "Present", "here")
    with pytest.raises(ArtifactNotFound):
        fs.read_topic_head(sid, "tm_missing")
    with pytest.raises(RevisionNotFound):
        fs.read_topic_revision(sid, key.artifact_id, 2)
    with pytest.raises(ScopeNotFound):
        fs.read_topic_head("missing", key.artifact_id)
    with pytest.raises(ScopeNotFound):
        fs.create_topic("missing", NewTopic("t", "b", ()))
    with pytest.raises(ArtifactNotFound):
        fs.revise_topic(sid, "tm_missing", 1, TopicEdit(title="t"))
    with pytest.raises(ArtifactNotFound):  # Scope-qualified: invisible from another Scope
        fs.read_topic_head(scope(fs), key.artifact_id)
    assert fs.search_topics("missing", query_terms("present"), 10) == []


def test_topic_search_title_outranks_body_stems_cjk_and_limits(fs: Both) -> None:
    sid, other = scope(fs), scope(fs)
    in_title = topic(fs, sid, "Sqlite tuning", "notes about pragmas and caches")
    in_body = topic(fs, sid, "Storage notes", "we picked sqlite over the alternatives for now")
    for i in range(4):
        topic(fs, sid, f"Filler {i}", "unrelated words about lunch " * 5)
    cjk = topic(fs, sid, "迁移计划", "我们决定把数据迁移到新的集群")
    topic(fs, other, "Sqlite elsewhere", "sqlite")
    scored = fs.search_topics(sid, query_terms("sqlite"), 50)
    assert [h.record.key for h in scored] == [in_title, in_body]
    assert scored[0].score >= scored[1].score
    assert topic_hits(fs, sid, "tuned") == [in_title]  # stemmed
    assert topic_hits(fs, sid, "数据") == [cjk]
    assert topic_hits(fs, sid, "计划") == [cjk]
    assert len(topic_hits(fs, sid, "lunch", limit=3)) == 3
    assert fs.search_topics(sid, [], 10) == []
    assert topic_hits(fs, sid, 'NEAR "quoted" *') == []


# -- family isolation --------------------------------------------------------------------------


def test_families_never_see_each_others_rows(fs: Both) -> None:
    sid = scope(fs)
    (memory,) = fs.create_memories(sid, [NewMemory("isoword memory statement", "fact", ())])
    t = topic(fs, sid, "Isoword topic", "isoword body")
    e = experience(fs, sid, "isoword situation")
    fs.commit_profile(sid, 0, [ProfileEntry("isoword", "isoword value")])
    assert memory_hits(fs, sid, "isoword") == [memory.key]
    assert topic_hits(fs, sid, "isoword") == [t]
    assert exp_hits(fs, sid, "isoword") == [e]
    # Exact reads are family-qualified too: an id of one family is unknown to another.
    with pytest.raises(ArtifactNotFound):
        fs.read_head(sid, t.artifact_id)
    with pytest.raises(ArtifactNotFound):
        fs.read_topic_head(sid, memory.key.artifact_id)
    with pytest.raises(ArtifactNotFound):
        fs.read_experience_head(sid, t.artifact_id)
    with pytest.raises(ArtifactNotFound):
        fs.change_lifecycle(sid, e.artifact_id, "forget", None)
    # Retiring a topic leaves the other families' searches alone.
    fs.change_topic_lifecycle(sid, t.artifact_id, "retire", None)
    assert memory_hits(fs, sid, "isoword") == [memory.key]
    assert exp_hits(fs, sid, "isoword") == [e]


def test_floor_statistics_count_each_familys_active_heads_per_term(fs: Both) -> None:
    """The relevance floor's inputs for Topic Memory and Experience: N active heads, n(t) holding each term."""
    sid = scope(fs)
    terms = query_terms("settlement ledger blue")
    assert fs.topic_term_statistics(sid, terms) == (0, {})
    assert fs.experience_term_statistics(sid, terms) == (0, {})
    settle = topic(fs, sid, "Settlement", "The ledger is reconciled nightly")
    topic(fs, sid, "Deploys", "Blue-green releases")
    experience(fs, sid, "Ledger drift after a late settlement")
    fs.create_memories(sid, [NewMemory("settlement ledger blue", "fact", ())])  # another family: not counted
    stem = dict(zip(("settlement", "ledger", "blue"), terms, strict=True))
    assert fs.topic_term_statistics(sid, terms) == (2, {stem["settlement"]: 1, stem["ledger"]: 1, stem["blue"]: 1})
    assert fs.experience_term_statistics(sid, terms) == (1, {stem["settlement"]: 1, stem["ledger"]: 1})
    fs.change_topic_lifecycle(sid, settle.artifact_id, "retire", None)
    assert fs.topic_term_statistics(sid, terms) == (1, {stem["blue"]: 1})


# -- experience --------------------------------------------------------------------------------


def test_candidate_approval_creates_an_experience(fs: Both) -> None:
    sid = scope(fs)
    proposal = draft("Flaky pipelineword tests", "Pin the seed", "Adding sleeps", "ci")
    candidate = fs.propose_experience(sid, proposal)
    assert (candidate.status, candidate.candidate_revision, candidate.result) == ("pending", 1, None)
    assert candidate.candidate_id.startswith("exc_") and len(candidate.candidate_id) == 30
    assert fs.read_candidate(sid, candidate.candidate_id) == candidate
    assert exp_hits(fs, sid, "pipelineword") == []  # pending Candidates are never searchable
    approved, record = fs.approve_candidate(sid, candidate.candidate_id, 1)
    assert record.key == ArtifactKey(sid, "experience", record.key.artifact_id, 1)
    assert record.key.artifact_id.startswith("ex_")
    assert (record.state, record.content, record.tags, record.candidate_id) == (
        "active",
        proposal.content,
        ("ci",),
        candidate.candidate_id,
    )
    assert record.render_text() == (
        "Situation: Flaky pipelineword tests\nWhat worked: Pin the seed\nWhat to avoid: Adding sleeps"
    )
    assert (approved.status, approved.result) == ("approved", record.key)
    assert fs.read_candidate(sid, candidate.candidate_id) == approved
    assert fs.read_experience_head(sid, record.key.artifact_id) == record
    assert exp_hits(fs, sid, "pipelineword") == [record.key]
    assert exp_hits(fs, sid, "seed") == [record.key]
    for review in (
        lambda: fs.approve_candidate(sid, candidate.candidate_id, None),
        lambda: fs.reject_candidate(sid, candidate.candidate_id, None, "late"),
        lambda: fs.revise_candidate(sid, candidate.candidate_id, 1, proposal),
    ):
        with pytest.raises(CandidateNotPending):
            review()


def test_candidate_reject_and_revise(fs: Both) -> None:
    sid = scope(fs)
    rejected = fs.propose_experience(sid, draft("rejectword"))
    out = fs.reject_candidate(sid, rejected.candidate_id, None, "duplicate")
    assert (out.status, out.reject_reason, out.result) == ("rejected", "duplicate", None)
    with pytest.raises(CandidateNotPending):
        fs.approve_candidate(sid, rejected.candidate_id, None)
    assert exp_hits(fs, sid, "rejectword") == []

    pending = fs.propose_experience(sid, draft("draftword one"))
    with pytest.raises(CandidateRevisionConflict):
        fs.revise_candidate(sid, pending.candidate_id, 2, draft("draftword two"))
    revised = fs.revise_candidate(sid, pending.candidate_id, 1, draft("draftword two", "better", "worse", "x"))
    assert (revised.status, revised.candidate_revision, revised.draft.content.situation) == (
        "pending",
        2,
        "draftword two",
    )
    assert fs.read_candidate(sid, pending.candidate_id) == revised
    with pytest.raises(CandidateRevisionConflict):
        fs.approve_candidate(sid, pending.candidate_id, 1)
    _, record = fs.approve_candidate(sid, pending.candidate_id, 2)
    assert (record.content.situation, record.content.what_worked, record.tags) == ("draftword two", "better", ("x",))


def test_candidate_can_revise_an_existing_experience(fs: Both) -> None:
    sid = scope(fs)
    first = experience(fs, sid, "oldword situation")
    aid = first.artifact_id
    proposal = draft("newword situation", target_artifact_id=aid, expected_revision=1)
    candidate = fs.propose_experience(sid, proposal)
    _, second = fs.approve_candidate(sid, candidate.candidate_id, None)
    assert second.key == ArtifactKey(sid, "experience", aid, 2)
    assert second.head_revision == 2
    assert exp_hits(fs, sid, "oldword") == [] and exp_hits(fs, sid, "newword") == [second.key]
    old = fs.read_experience_revision(sid, aid, 1)
    assert (old.content.situation, old.head_revision) == ("oldword situation", 2)
    # A second proposal based on revision 1 is stale: refused at proposal and, if the head moves later, at approval.
    with pytest.raises(RevisionConflict):
        fs.propose_experience(sid, draft("x", target_artifact_id=aid, expected_revision=1))
    racing = [
        fs.propose_experience(sid, draft(f"race {n}", target_artifact_id=aid, expected_revision=2)) for n in (1, 2)
    ]
    fs.approve_candidate(sid, racing[0].candidate_id, None)
    with pytest.raises(RevisionConflict):
        fs.approve_candidate(sid, racing[1].candidate_id, None)
    assert fs.read_candidate(sid, racing[1].candidate_id).status == "pending"
    assert fs.read_experience_head(sid, aid).head_revision == 3


def test_candidate_targets_must_exist_and_be_active(fs: Both) -> None:
    sid = scope(fs)
    with pytest.raises(ArtifactNotFound):
        fs.propose_experience(sid, draft("x", target_artifact_id="ex_missing", expected_revision=1))
    t = topic(fs, sid, "A topic", "not an experience")
    with pytest.raises(ArtifactNotFound):
        fs.propose_experience(sid, draft("x", target_artifact_id=t.artifact_id, expected_revision=1))
    e = experience(fs, sid, "soon retired")
    pending = fs.propose_experience(sid, draft("y", target_artifact_id=e.artifact_id, expected_revision=1))
    fs.change_experience_lifecycle(sid, e.artifact_id, "retire", None)
    with pytest.raises(NotActive):
        fs.approve_candidate(sid, pending.candidate_id, None)
    with pytest.raises(NotActive):
        fs.propose_experience(sid, draft("z", target_artifact_id=e.artifact_id, expected_revision=1))
    with pytest.raises(ValueError):
        draft("half a target", target_artifact_id=e.artifact_id)


def test_experience_retire_and_exact_reads(fs: Both) -> None:
    sid = scope(fs)
    key = experience(fs, sid, "retireword lesson")
    with pytest.raises(RevisionConflict):
        fs.change_experience_lifecycle(sid, key.artifact_id, "retire", 5)
    retired = fs.change_experience_lifecycle(sid, key.artifact_id, "retire", 1)
    assert (retired.state, retired.key) == ("retired", key)
    assert exp_hits(fs, sid, "retireword") == []
    exact = fs.read_experience_revision(sid, key.artifact_id, 1)
    assert (exact.state, exact.content.situation) == ("retired", "retireword lesson")
    with pytest.raises(NotActive):
        fs.change_experience_lifecycle(sid, key.artifact_id, "retire", None)
    with pytest.raises(RevisionNotFound):
        fs.read_experience_revision(sid, key.artifact_id, 2)


def test_experience_missing_things(fs: Both) -> None:
    sid = scope(fs)
    with pytest.raises(CandidateNotFound):
        fs.read_candidate(sid, "exc_missing")
    with pytest.raises(CandidateNotFound):
        fs.approve_candidate(sid, "exc_missing", None)
    with pytest.raises(ScopeNotFound):
        fs.read_candidate("missing", "exc_missing")
    with pytest.raises(ScopeNotFound):
        fs.propose_experience("missing", draft("x"))
    with pytest.raises(ArtifactNotFound):
        fs.read_experience_head(sid, "ex_missing")
    with pytest.raises(ArtifactNotFound):
        fs.change_experience_lifecycle(sid, "ex_missing", "retire", None)
    candidate = fs.propose_experience(sid, draft("scoped"))
    with pytest.raises(CandidateNotFound):  # Candidates are Scope-qualified too
        fs.read_candidate(scope(fs), candidate.candidate_id)


# -- profile -----------------------------------------------------------------------------------


def test_profile_commits_snapshots_with_compare_and_swap(fs: Both) -> None:
    sid = scope(fs)
    assert fs.read_profile_snapshot(sid) is None
    assert fs.read_profile_snapshot("no-such-scope") is None
    with pytest.raises(ProfileNotFound):
        fs.read_profile_revision(sid, 1)
    with pytest.raises(RevisionConflict):
        fs.commit_profile(sid, 1, [ProfileEntry("k", "v")])
    first = fs.commit_profile(sid, 0, [ProfileEntry("language", "Python 3.11"), ProfileEntry("style", "ruff\nmypy")])
    assert first.key == ArtifactKey(sid, "profile", "profile", 1)
    assert first.render_text() == "language: Python 3.11\nstyle: ruff\n  mypy"
    assert fs.read_profile_snapshot(sid) == first
    with pytest.raises(RevisionConflict):
        fs.commit_profile(sid, 0, [ProfileEntry("k", "v")])
    second = fs.commit_profile(sid, 1, [ProfileEntry("language", "Python 3.12")])
    assert (second.key.revision, second.head_revision, second.entries) == (
        2,
        2,
        (ProfileEntry("language", "Python 3.12"),),
    )
    assert fs.read_profile_snapshot(sid) == second
    old = fs.read_profile_revision(sid, 1)
    assert (old.key, old.entries, old.head_revision) == (first.key, first.entries, 2)
    with pytest.raises(RevisionNotFound):
        fs.read_profile_revision(sid, 3)
    with pytest.raises(ScopeNotFound):
        fs.commit_profile("no-such-scope", 0, [ProfileEntry("k", "v")])
    with pytest.raises(ScopeNotFound):
        fs.read_profile_revision("no-such-scope", 1)


# -- concurrency and persistence ---------------------------------------------------------------


def _race(n: int, action: Callable[[int], object]) -> tuple[list[object], list[BaseException]]:
    results: list[object] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    barrier = threading.Barrier(n)

    def go(i: int) -> None:
        barrier.wait()
        try:
            out = action(i)
            with lock:
                results.append(out)
        except BaseException as exc:
            with lock:
                errors.append(exc)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors


def test_concurrent_writers_get_one_success_and_clear_conflicts(fs: Both) -> None:
    sid = scope(fs)
    key = topic(fs, sid, "Raced", "body")
    ok, failed = _race(6, lambda i: fs.revise_topic(sid, key.artifact_id, 1, TopicEdit(body=f"writer {i}")))
    assert len(ok) == 1 and len(failed) == 5 and all(isinstance(e, RevisionConflict) for e in failed)
    assert fs.read_topic_head(sid, key.artifact_id).head_revision == 2

    candidate = fs.propose_experience(sid, draft("raced lesson"))
    ok, failed = _race(6, lambda i: fs.approve_candidate(sid, candidate.candidate_id, None))
    assert len(ok) == 1 and all(isinstance(e, CandidateNotPending) for e in failed)
    assert len(exp_hits(fs, sid, "raced")) == 1

    ok, failed = _race(6, lambda i: fs.commit_profile(sid, 0, [ProfileEntry("writer", str(i))]))
    assert len(ok) == 1 and all(isinstance(e, RevisionConflict) for e in failed)


def test_reopen_keeps_family_data(open_store: Callable[[], Store]) -> None:
    first = open_store()
    assert isinstance(first, FamilyStore)
    sid = scope(first)
    t = first.create_topic(sid, NewTopic("Persisted topic", "persistword", ())).key
    candidate = first.propose_experience(sid, draft("persisted lesson"))
    first.commit_profile(sid, 0, [ProfileEntry("k", "v")])
    first.close()
    second = open_store()
    assert isinstance(second, FamilyStore)
    assert [h.record.key for h in second.search_topics(sid, query_terms("persistword"), 5)] == [t]
    assert second.read_candidate(sid, candidate.candidate_id).status == "pending"
    snapshot = second.read_profile_snapshot(sid)
    assert snapshot is not None and snapshot.entries == (ProfileEntry("k", "v"),)
