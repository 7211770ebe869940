"""The SQLite schema (store/sqlite/migrations.py) in OceanBase MySQL-mode DDL, version for version.

Same tables, columns and keys, so ``store copy`` maps rows one to one. Differences: text keys are
``VARCHAR … COLLATE utf8mb4_bin`` (SQLite compares bytes; MySQL's default collation folds case), JSON
text columns that need a default are long ``VARCHAR`` (MySQL allows no default on TEXT), and the FTS5
virtual tables become ``fts_docs``/``fts_segments``/``fts_totals`` (see fulltext.py; version 7 packs the
postings, a no-op on SQLite). Version numbers are shared with SQLite: a change one backend does not
need is an explicit no-op step there, so both ``LATEST_VERSION`` are equal and the next migration is
``LATEST_VERSION + 1`` on both (see store/sqlite/migrations.py). Embeddings are stored as
little-endian float32 bytes, not ``VECTOR(n)``: seekdb returns a ``VECTOR`` value only as 6-digit
text, so what is read back is not what was written, and parsing it is slow (see docs/oceanbase.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from powercontext.store.core.schema_versions import pending_migrations
from powercontext.store.oceanbase.segments import pack_legacy_postings, segments_in_columns

if TYPE_CHECKING:
    from powercontext.store.oceanbase.dialect import Connection

_T = "DEFAULT CHARSET utf8mb4 COLLATE utf8mb4_bin"
KEY = "VARCHAR(255)"  # scope ids, artifact ids, model ids, terms
JSON_TEXT = "VARCHAR(65535) NOT NULL DEFAULT '[]'"

# A step is DDL text, or a function run on the writer session (a data conversion).
MIGRATIONS: list[tuple[int, list[str | Callable[[Connection], None]]]] = [
    (
        1,
        [
            f"""CREATE TABLE scopes (
              scope_id {KEY} PRIMARY KEY,
              title LONGTEXT NOT NULL,
              context_references {JSON_TEXT},
              created_at VARCHAR(32) NOT NULL,
              updated_at VARCHAR(32) NOT NULL
            ) {_T}""",
            f"""CREATE TABLE artifacts (
              id BIGINT PRIMARY KEY AUTO_INCREMENT,
              scope_id {KEY} NOT NULL,
              family {KEY} NOT NULL,
              artifact_id {KEY} NOT NULL,
              head_revision BIGINT NOT NULL CHECK (head_revision >= 1),
              state {KEY} NOT NULL CHECK (state IN ('active', 'forgotten', 'retired', 'merged')),
              merged_into {KEY},
              created_at VARCHAR(32) NOT NULL,
              updated_at VARCHAR(32) NOT NULL,
              UNIQUE KEY artifacts_key (scope_id, family, artifact_id),
              KEY artifacts_by_state (scope_id, family, state)
            ) {_T}""",
            f"""CREATE TABLE revisions (
              artifact BIGINT NOT NULL,
              revision BIGINT NOT NULL CHECK (revision >= 1),
              kind {KEY} NOT NULL,
              body LONGTEXT NOT NULL,
              tags LONGTEXT NOT NULL,
              merged_from {JSON_TEXT},
              created_at VARCHAR(32) NOT NULL,
              PRIMARY KEY (artifact, revision)
            ) {_T}""",
            f"""CREATE TABLE idempotency_keys (
              scope_id {KEY} NOT NULL,
              idem_key {KEY} NOT NULL,
              request_digest {KEY} NOT NULL,
              artifact BIGINT NOT NULL,
              PRIMARY KEY (scope_id, idem_key)
            ) {_T}""",
            # The FTS5 tables' replacement: one row per indexed document, its term postings, and the
            # per-index totals BM25 divides by.
            f"""CREATE TABLE fts_docs (
              fts_table VARCHAR(32) NOT NULL,
              doc_id BIGINT NOT NULL,
              scope_tag VARCHAR(32) NOT NULL,
              ntokens BIGINT NOT NULL,
              PRIMARY KEY (fts_table, doc_id),
              KEY fts_docs_by_scope (fts_table, scope_tag)
            ) {_T}""",
            f"""CREATE TABLE fts_postings (
              fts_table VARCHAR(32) NOT NULL,
              term {KEY} NOT NULL,
              doc_id BIGINT NOT NULL,
              tf1 INT NOT NULL,
              tf2 INT NOT NULL,
              PRIMARY KEY (fts_table, term, doc_id),
              KEY fts_postings_by_doc (fts_table, doc_id)
            ) {_T}""",
            f"""CREATE TABLE fts_totals (
              fts_table VARCHAR(32) PRIMARY KEY,
              docs BIGINT NOT NULL,
              tokens BIGINT NOT NULL
            ) {_T}""",
            # One row; every write transaction locks it first, so writers of all Server processes
            # queue like SQLite's single writer and compare-and-set stays exact.
            f"CREATE TABLE store_locks (name VARCHAR(32) PRIMARY KEY) {_T}",
            "INSERT INTO store_locks (name) VALUES ('writer')",
        ],
    ),
    (
        2,
        [
            f"""CREATE TABLE fts_term_docs (
              scope_id {KEY} NOT NULL,
              term {KEY} NOT NULL,
              docs BIGINT NOT NULL CHECK (docs > 0),
              PRIMARY KEY (scope_id, term)
            ) {_T}""",
        ],
    ),
    (
        3,
        [
            f"""CREATE TABLE artifact_embeddings (
              artifact BIGINT NOT NULL,
              revision BIGINT NOT NULL,
              model_id {KEY} NOT NULL,
              vector LONGBLOB NOT NULL,
              PRIMARY KEY (artifact, revision)
            ) {_T}""",
            f"""CREATE TABLE vector_generations (
              scope_id {KEY} NOT NULL,
              family {KEY} NOT NULL,
              generation BIGINT NOT NULL,
              PRIMARY KEY (scope_id, family)
            ) {_T}""",
        ],
    ),
    (
        4,
        [
            "ALTER TABLE revisions ADD COLUMN fields LONGTEXT",
            f"""CREATE TABLE artifact_candidates (
              id BIGINT PRIMARY KEY AUTO_INCREMENT,
              scope_id {KEY} NOT NULL,
              family {KEY} NOT NULL,
              candidate_id {KEY} NOT NULL,
              candidate_revision BIGINT NOT NULL CHECK (candidate_revision >= 1),
              status {KEY} NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
              fields LONGTEXT NOT NULL,
              tags LONGTEXT NOT NULL,
              target_artifact_id {KEY},
              expected_revision BIGINT,
              reject_reason LONGTEXT,
              result_artifact_id {KEY},
              result_revision BIGINT,
              created_at VARCHAR(32) NOT NULL,
              updated_at VARCHAR(32) NOT NULL,
              UNIQUE KEY candidates_key (scope_id, family, candidate_id),
              CHECK ((target_artifact_id IS NULL) = (expected_revision IS NULL))
            ) {_T}""",
        ],
    ),
    (
        5,
        [
            f"""CREATE TABLE code_trees (
              id BIGINT PRIMARY KEY AUTO_INCREMENT,
              scope_id {KEY} NOT NULL,
              fingerprint {KEY} NOT NULL,
              kind {KEY} NOT NULL CHECK (kind IN ('git', 'dir')),
              root_path LONGTEXT NOT NULL,
              max_file_bytes BIGINT NOT NULL CHECK (max_file_bytes >= 1),
              chunk_count BIGINT NOT NULL DEFAULT 0,
              created_at VARCHAR(32) NOT NULL,
              indexed_at VARCHAR(32) NOT NULL,
              UNIQUE KEY code_trees_key (scope_id, fingerprint)
            ) {_T}""",
            f"""CREATE TABLE code_files (
              id BIGINT PRIMARY KEY AUTO_INCREMENT,
              tree BIGINT NOT NULL,
              path VARCHAR(1024) NOT NULL,
              file_sha256 {KEY} NOT NULL,
              language {KEY} NOT NULL,
              size_bytes BIGINT NOT NULL CHECK (size_bytes >= 0),
              line_count BIGINT NOT NULL CHECK (line_count >= 0),
              UNIQUE KEY code_files_key (tree, path)
            ) {_T}""",
            f"""CREATE TABLE code_chunks (
              id BIGINT PRIMARY KEY AUTO_INCREMENT,
              file BIGINT NOT NULL,
              start_line BIGINT NOT NULL CHECK (start_line >= 1),
              end_line BIGINT NOT NULL,
              snippet_sha256 {KEY} NOT NULL,
              text LONGTEXT NOT NULL,
              KEY code_chunks_by_file (file),
              CHECK (end_line >= start_line)
            ) {_T}""",
        ],
    ),
    (
        6,
        [
            f"""CREATE TABLE code_chunk_embeddings (
              chunk BIGINT PRIMARY KEY,
              model_id {KEY} NOT NULL,
              vector LONGBLOB NOT NULL
            ) {_T}""",
        ],
    ),
    (
        7,
        [
            # Packed postings (fulltext.py): one row per (index, scope tag, term, segment) instead of one
            # row per posting; ``lo``/``hi`` bound the segment's doc ids so a removal reads only the
            # segments that can hold the document.
            f"""CREATE TABLE fts_segments (
              fts_table VARCHAR(32) NOT NULL,
              scope_tag VARCHAR(32) NOT NULL,
              term {KEY} NOT NULL,
              seg BIGINT NOT NULL,
              n BIGINT NOT NULL,
              lo BIGINT NOT NULL,
              hi BIGINT NOT NULL,
              postings LONGBLOB NOT NULL,
              PRIMARY KEY (fts_table, term, scope_tag, seg)
            ) {_T}""",
            "ALTER TABLE fts_docs ADD COLUMN terms LONGTEXT",
            "ALTER TABLE fts_totals ADD COLUMN seq BIGINT NOT NULL DEFAULT 0",
            pack_legacy_postings,
            "DROP TABLE fts_postings",
        ],
    ),
    (
        8,
        # When the revision's statement was true; NULL reads as created_at (see the SQLite migration 8).
        ["ALTER TABLE revisions ADD COLUMN observed_at VARCHAR(40)"],
    ),
    (
        9,
        [
            # BM25's document count and token total per (index, Scope), so a Scope ranks by its own statistics
            # (fulltext.py). Filled from the documents indexed now; rerunnable if a process died half-way.
            f"""CREATE TABLE IF NOT EXISTS fts_scope_totals (
              fts_table VARCHAR(32) NOT NULL,
              scope_tag VARCHAR(32) NOT NULL,
              docs BIGINT NOT NULL,
              tokens BIGINT NOT NULL,
              PRIMARY KEY (fts_table, scope_tag)
            ) {_T}""",
            "DELETE FROM fts_scope_totals",
            "INSERT INTO fts_scope_totals (fts_table, scope_tag, docs, tokens)"
            " SELECT fts_table, scope_tag, COUNT(*), SUM(ntokens) FROM fts_docs GROUP BY fts_table, scope_tag",
        ],
    ),
    (
        10,
        [
            # Sources and their lineage (see the SQLite migration 10).
            f"""CREATE TABLE sources (
              id BIGINT PRIMARY KEY AUTO_INCREMENT,
              scope_id {KEY} NOT NULL,
              source_id {KEY} NOT NULL,
              kind {KEY} NOT NULL,
              content LONGTEXT NOT NULL,
              content_digest {KEY} NOT NULL,
              redactions {JSON_TEXT},
              origin_host {KEY},
              origin_session {KEY},
              origin_turn BIGINT,
              observed_at VARCHAR(40) NOT NULL,
              created_at VARCHAR(32) NOT NULL,
              status {KEY} NOT NULL CHECK (status IN ('pending', 'done', 'failed', 'skipped')),
              reason LONGTEXT,
              attempts BIGINT NOT NULL DEFAULT 0,
              lease_owner {KEY},
              lease_until VARCHAR(32),
              next_attempt_at VARCHAR(32),
              UNIQUE KEY sources_key (scope_id, source_id),
              KEY sources_by_status (status, next_attempt_at)
            ) {_T}""",
            f"""CREATE TABLE revision_sources (
              artifact BIGINT NOT NULL,
              revision BIGINT NOT NULL,
              source_row BIGINT NOT NULL,
              PRIMARY KEY (artifact, revision, source_row),
              KEY revision_sources_by_source (source_row)
            ) {_T}""",
        ],
    ),
    # 11: the SQLite store moves to packed postings; this store has kept them since version 7.
    (11, []),
    (
        12,
        [
            f"""CREATE TABLE purged_artifacts (
              artifact BIGINT PRIMARY KEY,
              purged_at VARCHAR(32) NOT NULL
            ) {_T}""",
        ],
    ),
    (
        13,
        [
            # A Scope's extraction policy (see the SQLite migration 13).
            f"""CREATE TABLE extraction_policies (
              scope_id {KEY} PRIMARY KEY,
              explicit {KEY} NOT NULL CHECK (explicit IN ('apply', 'review')),
              model {KEY} NOT NULL CHECK (model IN ('apply', 'review')),
              updated_at VARCHAR(32) NOT NULL
            ) {_T}""",
        ],
    ),
    # SQLite's tail rows of its packed index (store/sqlite/tails.py); this store's writer keeps no tail.
    (14, []),
    # SQLite's artifact_embeddings gets rowids and two indexes (see the SQLite migration 15): there a vector
    # overflowed its cell. Here rows are not stored that way.
    (15, []),
    # Postings segments in columns, 8 bytes a posting instead of 20 (see the SQLite migration 16).
    (16, [segments_in_columns]),
]

LATEST_VERSION = MIGRATIONS[-1][0]


def apply_migrations(conn: Connection, now: str) -> int:
    """Create or upgrade the schema. DDL commits implicitly in MySQL mode, so each migration records
    itself last and a second process racing on the same database skips what the first finished. An up-to-date
    database gets no DDL at all (see ``engine.ensure_database``: DDL just after the engine starts can stall)."""
    exists = conn.query(
        "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'schema_migrations'"
    ).fetchone()
    if exists is None:
        conn.query(
            f"CREATE TABLE IF NOT EXISTS schema_migrations (version INT PRIMARY KEY, applied_at VARCHAR(32) NOT NULL)"
            f" {_T}"
        )
    applied = {int(row[0]) for row in conn.query("SELECT version FROM schema_migrations").fetchall()}
    for version, statements in pending_migrations(MIGRATIONS, applied):
        for statement in statements:
            if callable(statement):
                statement(conn)
            else:
                conn.query(statement)
        conn.query("INSERT INTO schema_migrations (version, applied_at) VALUES (%s, %s)", (version, now))
        conn.raw.commit()
    return LATEST_VERSION
