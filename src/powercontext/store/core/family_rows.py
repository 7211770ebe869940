"""Row access shared by the Topic Memory, Experience, Profile and Prompt mixins of both stores.

They store their revisions in the generic ``artifacts``/``revisions`` tables: ``body`` is the family's
rendered text, ``fields`` its structured content as JSON (the source the records are built from).
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from powercontext.contract.common import ArtifactFamily, LifecycleState
from powercontext.domain.families import FamilyTransitionRefused, family_next_state
from powercontext.domain.identity import ArtifactKey
from powercontext.store.errors import (
    ArtifactNotFound,
    ArtifactPurged,
    IdempotencyConflict,
    NotActive,
    RevisionConflict,
    RevisionNotFound,
    ScopeNotFound,
)
from powercontext.text.tokenize import terms as index_terms

if TYPE_CHECKING:
    from powercontext.store.core.fulltext import FullTextIndex

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
# Two base-32 digits per 10 bits, lower digit first: half the divisions of one digit at a time.
_DIGIT_PAIRS = tuple(_CROCKFORD[n % 32] + _CROCKFORD[n // 32] for n in range(1024))

SELECT_ROW = """
SELECT a.id, a.scope_id, a.family, a.artifact_id, r.revision, a.head_revision, a.state, r.tags, r.fields,
       r.created_at
FROM artifacts a JOIN revisions r ON r.artifact = a.id
"""


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id(prefix: str) -> str:
    """``prefix`` + 26 Crockford base32 characters of 128 random bits (the ``am_`` id scheme), least significant
    digit first."""
    value = int.from_bytes(secrets.token_bytes(16), "big")
    pairs = []
    for _ in range(13):
        value, rem = divmod(value, 1024)
        pairs.append(_DIGIT_PAIRS[rem])
    return prefix + "".join(pairs)


def scope_tag(scope_id: str) -> str:
    # A single FTS term standing for the Scope; hex keeps it one unicode61 token.
    return "s" + hashlib.sha256(scope_id.encode("utf-8")).hexdigest()[:24]


@dataclass(frozen=True, slots=True)
class ArtifactRow:
    """One revision row joined with its Artifact's current head and state."""

    rowid: int
    scope_id: str
    family: ArtifactFamily
    artifact_id: str
    revision: int
    head_revision: int
    state: LifecycleState
    tags: tuple[str, ...]
    fields: dict[str, Any]
    created_at: str

    @property
    def key(self) -> ArtifactKey:
        return ArtifactKey(self.scope_id, self.family, self.artifact_id, self.revision)

    def key_at(self, revision: int) -> ArtifactKey:
        return ArtifactKey(self.scope_id, self.family, self.artifact_id, revision)


def artifact_row(raw: Any) -> ArtifactRow:
    rowid, scope_id, family, artifact_id, revision, head, state, tags, fields, created = raw
    return ArtifactRow(
        rowid,
        scope_id,
        cast(ArtifactFamily, family),
        artifact_id,
        revision,
        head,
        cast(LifecycleState, state),
        tuple(json.loads(tags)),
        json.loads(fields),
        created,
    )


def active_heads(conn: Any, rowids: Sequence[int]) -> dict[int, ArtifactRow]:
    """The active head rows of these artifacts, by rowid (a vector hit may have been retired since)."""
    if not rowids:
        return {}
    marks = ",".join("?" * len(rowids))
    rows = conn.execute(
        SELECT_ROW + f" WHERE a.id IN ({marks}) AND r.revision = a.head_revision AND a.state = 'active'", list(rowids)
    ).fetchall()
    return {row.rowid: row for row in map(artifact_row, rows)}


def refuse_purged(conn: Any, rowid: int) -> None:
    """A purged Artifact (``core.purge``) answers every exact read with ``ArtifactPurged`` (410)."""
    if conn.execute("SELECT 1 FROM purged_artifacts WHERE artifact = ?", (rowid,)).fetchone() is not None:
        raise ArtifactPurged()


def require_scope(conn: Any, scope_id: str) -> None:
    if conn.execute("SELECT 1 FROM scopes WHERE scope_id = ?", (scope_id,)).fetchone() is None:
        raise ScopeNotFound(scope_id)


def find_head(conn: Any, scope_id: str, family: ArtifactFamily, artifact_id: str) -> ArtifactRow | None:
    raw = conn.execute(
        SELECT_ROW + " WHERE a.scope_id = ? AND a.family = ? AND a.artifact_id = ? AND r.revision = a.head_revision",
        (scope_id, family, artifact_id),
    ).fetchone()
    return None if raw is None else artifact_row(raw)


def head_row(
    conn: Any,
    scope_id: str,
    family: ArtifactFamily,
    artifact_id: str,
    not_found: Callable[[], ArtifactNotFound] = ArtifactNotFound,
) -> ArtifactRow:
    """The head revision; raises ``ScopeNotFound``, or ``not_found()`` when the Scope has no such Artifact."""
    row = find_head(conn, scope_id, family, artifact_id)
    if row is None:
        require_scope(conn, scope_id)
        raise not_found()
    refuse_purged(conn, row.rowid)
    return row


def family_heads(conn: Any, scope_id: str, family: ArtifactFamily) -> list[ArtifactRow]:
    """Every head of one family in one Scope, in any state, ordered by artifact id."""
    rows = conn.execute(
        SELECT_ROW + " WHERE a.scope_id = ? AND a.family = ? AND r.revision = a.head_revision"
        " AND a.id NOT IN (SELECT artifact FROM purged_artifacts) ORDER BY a.artifact_id",
        (scope_id, family),
    ).fetchall()
    return [artifact_row(raw) for raw in rows]


def revision_row(
    conn: Any,
    scope_id: str,
    family: ArtifactFamily,
    artifact_id: str,
    revision: int,
    not_found: Callable[[], ArtifactNotFound] = ArtifactNotFound,
) -> ArtifactRow:
    """One exact revision, whatever the Artifact's state; never follows the head."""
    raw = conn.execute(
        SELECT_ROW + " WHERE a.scope_id = ? AND a.family = ? AND a.artifact_id = ? AND r.revision = ?",
        (scope_id, family, artifact_id, revision),
    ).fetchone()
    if raw is None:
        head = head_row(conn, scope_id, family, artifact_id, not_found)
        raise RevisionNotFound(head.head_revision)
    row = artifact_row(raw)
    refuse_purged(conn, row.rowid)
    return row


def insert_artifact(conn: Any, scope_id: str, family: ArtifactFamily, artifact_id: str, at: str) -> int:
    cur = conn.execute(
        "INSERT INTO artifacts (scope_id, family, artifact_id, head_revision, state, created_at, updated_at)"
        " VALUES (?, ?, ?, 1, 'active', ?, ?)",
        (scope_id, family, artifact_id, at, at),
    )
    return int(cur.lastrowid)


def next_snapshot_revision(
    conn: Any, scope_id: str, family: ArtifactFamily, artifact_id: str, expected_revision: int, at: str
) -> tuple[ArtifactRow | None, int, int]:
    """For an artifact committed whole at a caller-named id (a Profile, a Prompt): its head before this commit (None
    for the first), its row id (made for the first) and the revision to write. ``expected_revision`` is the current
    head, 0 for the first commit; anything else is a ``RevisionConflict``."""
    head = find_head(conn, scope_id, family, artifact_id)
    if head is None:
        require_scope(conn, scope_id)
    current = 0 if head is None else head.head_revision
    if expected_revision != current:
        raise RevisionConflict(expected_revision, current)
    row_id = insert_artifact(conn, scope_id, family, artifact_id, at) if head is None else head.rowid
    return head, row_id, current + 1


def insert_revision(
    conn: Any, rowid: int, revision: int, body: str, tags: Sequence[str], fields: dict[str, Any], at: str
) -> None:
    """Write one immutable revision; a revision after the first also becomes the head."""
    conn.execute(
        "INSERT INTO revisions (artifact, revision, kind, body, tags, fields, created_at)"
        " VALUES (?, ?, '', ?, ?, ?, ?)",
        (rowid, revision, body, json.dumps(list(tags)), json.dumps(fields, ensure_ascii=False), at),
    )
    if revision > 1:
        conn.execute("UPDATE artifacts SET head_revision = ?, updated_at = ? WHERE id = ?", (revision, at, rowid))


def set_state(conn: Any, rowid: int, state: LifecycleState, at: str) -> None:
    conn.execute("UPDATE artifacts SET state = ?, updated_at = ? WHERE id = ?", (state, at, rowid))


def transition_head(
    conn: Any,
    head: tuple[str, ArtifactFamily, str],
    action: str,
    expected_revision: int | None,
    at: str,
    not_found: Callable[[], ArtifactNotFound] = ArtifactNotFound,
) -> tuple[ArtifactRow, LifecycleState]:
    """Apply a lifecycle ``action`` to the head of ``(scope_id, family, artifact_id)``: the head as it was and
    its new state. ``RevisionConflict`` when ``expected_revision`` is given and is not the head's;
    ``NotActive`` when the family's rules refuse the action in the head's state."""
    scope_id, family, artifact_id = head
    row = head_row(conn, scope_id, family, artifact_id, not_found)
    if expected_revision is not None and expected_revision != row.head_revision:
        raise RevisionConflict(expected_revision, row.head_revision)
    try:
        target = family_next_state(family, action, row.state)
    except FamilyTransitionRefused as exc:
        raise NotActive(str(exc)) from exc
    set_state(conn, row.rowid, target, at)
    return row, target


def row_by_id(conn: Any, rowid: int, revision: int) -> ArtifactRow:
    return artifact_row(conn.execute(SELECT_ROW + " WHERE a.id = ? AND r.revision = ?", (rowid, revision)).fetchone())


# -- idempotency -------------------------------------------------------------------------------


def _family_digest(family: ArtifactFamily, digest: str) -> str:
    # Keys live in the shared idempotency_keys table; the family prefix makes a key reused across
    # families a conflict, never a replay of another family's Artifact.
    return f"{family}:{digest}"


def replay(conn: Any, scope_id: str, family: ArtifactFamily, key: str, digest: str) -> ArtifactRow | None:
    """Revision 1 of the Artifact first created with ``key``, or None for a new key."""
    raw = conn.execute(
        "SELECT request_digest, artifact FROM idempotency_keys WHERE scope_id = ? AND idem_key = ?", (scope_id, key)
    ).fetchone()
    if raw is None:
        return None
    if raw[0] != _family_digest(family, digest):
        raise IdempotencyConflict()
    return row_by_id(conn, raw[1], 1)


def remember_key(conn: Any, scope_id: str, family: ArtifactFamily, key: str, digest: str, rowid: int) -> None:
    conn.execute(
        "INSERT INTO idempotency_keys (scope_id, idem_key, request_digest, artifact) VALUES (?, ?, ?, ?)",
        (scope_id, key, _family_digest(family, digest), rowid),
    )


# -- full text ---------------------------------------------------------------------------------


class FtsIndex:
    """One family's full-text index over its active heads (doc id = ``artifacts.id``), written through a store's
    ``FullTextIndex`` port (core/fulltext.py). ``columns`` are the indexed text columns, ``weights`` their BM25
    weights (``fulltext.INDEXES`` lists every index)."""

    def __init__(self, table: str, family: ArtifactFamily, columns: tuple[str, ...], weights: tuple[float, ...]):
        self.table = table
        self.family = family
        self.columns = columns
        self.weights = weights

    def add(self, fulltext: FullTextIndex, conn: Any, rowid: int, scope_id: str, texts: Sequence[str]) -> None:
        """Make one active head searchable; ``texts`` line up with ``columns``."""
        values = [" ".join(index_terms(text)) for text in texts]
        fulltext.add(conn, self.table, rowid, scope_tag(scope_id), values)

    def remove(self, fulltext: FullTextIndex, conn: Any, rowid: int, scope_id: str) -> None:
        fulltext.remove(conn, self.table, rowid, scope_tag(scope_id))
