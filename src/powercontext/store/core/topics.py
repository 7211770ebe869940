"""Topic Memory (both stores): titled bodies with revisions, retire/restore, and their own full-text index."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

from powercontext.domain.families import (
    TOPIC_ID_PREFIX,
    TOPIC_MEMORY,
    TopicAction,
)
from powercontext.domain.identity import ArtifactKey
from powercontext.store.base import NewTopic, Scored, ScoredTopic, TopicEdit, TopicRecord
from powercontext.store.core.connections import StoreConnections
from powercontext.store.core.family_rows import (
    ArtifactRow,
    FtsIndex,
    active_heads,
    head_row,
    insert_artifact,
    insert_revision,
    new_id,
    now,
    remember_key,
    replay,
    require_scope,
    revision_row,
    transition_head,
)
from powercontext.store.errors import NotActive, RevisionConflict

if TYPE_CHECKING:
    from powercontext.store.core.vectors import Vector

# A title names the topic, so a title word says more about relevance than the same word in the body.
TOPIC_FTS: Final = FtsIndex("topic_memory_fts", TOPIC_MEMORY, ("title", "body"), (2.0, 1.0))


def topic_record(row: ArtifactRow) -> TopicRecord:
    return TopicRecord(
        row.key, row.head_revision, row.state, row.fields["title"], row.fields["body"], row.tags, row.created_at
    )


def _write_revision(conn: Any, row_id: int, revision: int, title: str, body: str, tags: Sequence[str], at: str) -> None:
    text = f"{title}\n\n{body}"
    insert_revision(conn, row_id, revision, text, tags, {"title": title, "body": body}, at)


class Topics(StoreConnections):
    """The Topic Memory half of ``FamilyStore``."""

    def create_topic(self, scope_id: str, item: NewTopic) -> TopicRecord:
        at = now()
        with self._write() as conn:
            require_scope(conn, scope_id)
            if item.idempotency_key is not None:
                first = replay(conn, scope_id, TOPIC_MEMORY, item.idempotency_key, item.request_digest)
                if first is not None:
                    return topic_record(first)
            artifact_id = new_id(TOPIC_ID_PREFIX)
            row_id = insert_artifact(conn, scope_id, TOPIC_MEMORY, artifact_id, at)
            _write_revision(conn, row_id, 1, item.title, item.body, item.tags, at)
            TOPIC_FTS.add(self._fulltext, conn, row_id, scope_id, (item.title, item.body))
            self._changes.touch(conn, scope_id, TOPIC_MEMORY)
            if item.embedding is not None:
                e = item.embedding
                self._changes.store(conn, scope_id, TOPIC_MEMORY, row_id, 1, e.model_id, e.vector)
            if item.idempotency_key is not None:
                remember_key(conn, scope_id, TOPIC_MEMORY, item.idempotency_key, item.request_digest, row_id)
        key = ArtifactKey(scope_id, TOPIC_MEMORY, artifact_id, 1)
        return TopicRecord(key, 1, "active", item.title, item.body, item.tags, at)

    def revise_topic(self, scope_id: str, artifact_id: str, expected_revision: int, edit: TopicEdit) -> TopicRecord:
        at = now()
        with self._write() as conn:
            head = head_row(conn, scope_id, TOPIC_MEMORY, artifact_id)
            if head.state != "active":
                raise NotActive(f"only active Topic Memories can be revised; this one is {head.state}")
            if expected_revision != head.head_revision:
                raise RevisionConflict(expected_revision, head.head_revision)
            new_title, new_body = edit.title_and_body(head.fields["title"], head.fields["body"])
            new_tags = edit.tags if edit.tags is not None else head.tags
            revision = head.head_revision + 1
            _write_revision(conn, head.rowid, revision, new_title, new_body, new_tags, at)
            TOPIC_FTS.remove(self._fulltext, conn, head.rowid, scope_id)
            TOPIC_FTS.add(self._fulltext, conn, head.rowid, scope_id, (new_title, new_body))
            self._changes.unsearchable(conn, scope_id, TOPIC_MEMORY, head.rowid)
            if edit.embedding is not None:
                e = edit.embedding
                self._changes.store(conn, scope_id, TOPIC_MEMORY, head.rowid, revision, e.model_id, e.vector)
        return TopicRecord(head.key_at(revision), revision, "active", new_title, new_body, new_tags, at)

    def change_topic_lifecycle(
        self, scope_id: str, artifact_id: str, action: TopicAction, expected_revision: int | None
    ) -> TopicRecord:
        at = now()
        with self._write() as conn:
            head, target = transition_head(conn, (scope_id, TOPIC_MEMORY, artifact_id), action, expected_revision, at)
            if target == "active":
                TOPIC_FTS.add(self._fulltext, conn, head.rowid, scope_id, (head.fields["title"], head.fields["body"]))
                self._changes.searchable_again(conn, scope_id, TOPIC_MEMORY, head.rowid, head.head_revision)
            else:
                TOPIC_FTS.remove(self._fulltext, conn, head.rowid, scope_id)
                self._changes.unsearchable(conn, scope_id, TOPIC_MEMORY, head.rowid)
        return replace(topic_record(head), state=target)

    def read_topic_head(self, scope_id: str, artifact_id: str) -> TopicRecord:
        return topic_record(head_row(self._reader(), scope_id, TOPIC_MEMORY, artifact_id))

    def read_topic_revision(self, scope_id: str, artifact_id: str, revision: int) -> TopicRecord:
        return topic_record(revision_row(self._reader(), scope_id, TOPIC_MEMORY, artifact_id, revision))

    def search_topic_vector(self, scope_id: str, model_id: str, vector: Vector, limit: int) -> list[ScoredTopic]:
        """Active Topic Memory heads of one Scope by cosine similarity, among those embedded by ``model_id``."""
        conn = self._reader()
        hits = self._vector_hits(conn, scope_id, TOPIC_MEMORY, model_id, vector, limit)
        rows = active_heads(conn, [rowid for rowid, _ in hits])
        return [Scored(topic_record(rows[rowid]), score) for rowid, score in hits if rowid in rows]
