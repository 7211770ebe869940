"""Forward-only schema migrations. Append a new entry; never edit an applied one.

Version numbers are shared with the OceanBase family store (store/oceanbase/migrations.py): version
N is the same logical change on every backend, and a change that one backend does not need is an
explicit no-op step there (a comment-only script here). So every backend's ``LATEST_VERSION`` is the
same, its versions run 1..LATEST without a gap, and the next migration is ``LATEST_VERSION + 1`` on
all of them (tests/store_contract/test_migration_versions.py checks this).
"""

from __future__ import annotations

from typing import Any

from powercontext.store.core.schema_versions import pending_migrations
from powercontext.store.sqlite.data_steps import DATA_STEPS
from powercontext.store.sqlite.packed import SCHEMA as PACKED_SCHEMA
from powercontext.store.sqlite.tails import TAIL_SCHEMA

MIGRATIONS: list[tuple[int, str]] = [
    (
        1,
        """
        CREATE TABLE scopes (
          scope_id TEXT PRIMARY KEY,
          title TEXT NOT NULL,
          context_references TEXT NOT NULL DEFAULT '[]',
          created_at TEXT NOT NULL,
          updated_at TEXT NOT NULL
        ) WITHOUT ROWID;

        CREATE TABLE artifacts (
          id INTEGER PRIMARY KEY,
          scope_id TEXT NOT NULL REFERENCES scopes(scope_id),
          family TEXT NOT NULL,
          artifact_id TEXT NOT NULL,
          head_revision INTEGER NOT NULL CHECK (head_revision >= 1),
          state TEXT NOT NULL CHECK (state IN ('active', 'forgotten', 'retired', 'merged')),
          merged_into TEXT,
          created_at TEXT NOT NULL,
          updated_at TEXT NOT NULL,
          UNIQUE (scope_id, family, artifact_id)
        );

        CREATE TABLE revisions (
          artifact INTEGER NOT NULL REFERENCES artifacts(id),
          revision INTEGER NOT NULL CHECK (revision >= 1),
          kind TEXT NOT NULL,
          body TEXT NOT NULL,
          tags TEXT NOT NULL,
          merged_from TEXT NOT NULL DEFAULT '[]',
          created_at TEXT NOT NULL,
          PRIMARY KEY (artifact, revision)
        ) WITHOUT ROWID;

        CREATE TABLE idempotency_keys (
          scope_id TEXT NOT NULL REFERENCES scopes(scope_id),
          idem_key TEXT NOT NULL,
          request_digest TEXT NOT NULL,
          artifact INTEGER NOT NULL REFERENCES artifacts(id),
          PRIMARY KEY (scope_id, idem_key)
        ) WITHOUT ROWID;

        -- Only active heads have a row (rowid = artifacts.id). Terms are pre-tokenized in Python
        -- (stemming, CJK bigrams); scope_tag lets one MATCH restrict to a Scope.
        CREATE VIRTUAL TABLE atomic_memory_fts USING fts5(
          scope_tag, terms, tokenize = 'unicode61 remove_diacritics 0', content = '', contentless_delete = 1
        );
        """,
    ),
    (
        2,
        """
        -- Per-Scope document frequency of each index term over active heads, kept exact by every
        -- write, so a query can skip terms too common to rank by (see core/terms.py affordable_terms).
        CREATE TABLE fts_term_docs (
          scope_id TEXT NOT NULL REFERENCES scopes(scope_id),
          term TEXT NOT NULL,
          docs INTEGER NOT NULL CHECK (docs > 0),
          PRIMARY KEY (scope_id, term)
        ) WITHOUT ROWID;
        """,
    ),
    (
        3,
        """
        -- One embedding per exact revision, tagged with the model that made it: vectors of two
        -- models are never compared (see store/core/vectors.py).
        CREATE TABLE artifact_embeddings (
          artifact INTEGER NOT NULL,
          revision INTEGER NOT NULL,
          model_id TEXT NOT NULL,
          vector BLOB NOT NULL,
          PRIMARY KEY (artifact, revision),
          FOREIGN KEY (artifact, revision) REFERENCES revisions(artifact, revision)
        ) WITHOUT ROWID;

        -- Bumped by every write that changes a (Scope, family)'s searchable heads, so an in-memory
        -- vector matrix knows when another connection or process changed them.
        CREATE TABLE vector_generations (
          scope_id TEXT NOT NULL,
          family TEXT NOT NULL,
          generation INTEGER NOT NULL,
          PRIMARY KEY (scope_id, family)
        ) WITHOUT ROWID;
        """,
    ),
    (
        4,
        """
        -- Topic Memory, Experience and Profile share artifacts/revisions with Atomic Memory (so exact
        -- reads and per-(artifact, revision) projections work the same for every family). For them,
        -- revisions.body is the family's rendered text, kind is '', and fields holds the structured
        -- content as JSON. NULL for Atomic Memory, whose content predates the column.
        ALTER TABLE revisions ADD COLUMN fields TEXT;

        -- Proposals awaiting review (today only Experience). Mutable while pending; the approved
        -- result is an ordinary immutable revision.
        CREATE TABLE artifact_candidates (
          id INTEGER PRIMARY KEY,
          scope_id TEXT NOT NULL REFERENCES scopes(scope_id),
          family TEXT NOT NULL,
          candidate_id TEXT NOT NULL,
          candidate_revision INTEGER NOT NULL CHECK (candidate_revision >= 1),
          status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
          fields TEXT NOT NULL,
          tags TEXT NOT NULL,
          target_artifact_id TEXT,
          expected_revision INTEGER,
          reject_reason TEXT,
          result_artifact_id TEXT,
          result_revision INTEGER,
          created_at TEXT NOT NULL,
          updated_at TEXT NOT NULL,
          UNIQUE (scope_id, family, candidate_id),
          CHECK ((target_artifact_id IS NULL) = (expected_revision IS NULL))
        );

        -- One index per family, so no family's search ever sees another's rows. Only active heads
        -- have a row (rowid = artifacts.id); terms are pre-tokenized like atomic_memory_fts.
        CREATE VIRTUAL TABLE topic_memory_fts USING fts5(
          scope_tag, title, body, tokenize = 'unicode61 remove_diacritics 0', content = '', contentless_delete = 1
        );
        CREATE VIRTUAL TABLE experience_fts USING fts5(
          scope_tag, terms, tokenize = 'unicode61 remove_diacritics 0', content = '', contentless_delete = 1
        );
        """,
    ),
    (
        5,
        """
        -- A registered work tree of a Scope. root_path is server-local and never leaves the server.
        CREATE TABLE code_trees (
          id INTEGER PRIMARY KEY,
          scope_id TEXT NOT NULL REFERENCES scopes(scope_id),
          fingerprint TEXT NOT NULL,
          kind TEXT NOT NULL CHECK (kind IN ('git', 'dir')),
          root_path TEXT NOT NULL,
          max_file_bytes INTEGER NOT NULL CHECK (max_file_bytes >= 1),
          chunk_count INTEGER NOT NULL DEFAULT 0,
          created_at TEXT NOT NULL,
          indexed_at TEXT NOT NULL,
          UNIQUE (scope_id, fingerprint)
        );

        CREATE TABLE code_files (
          id INTEGER PRIMARY KEY,
          tree INTEGER NOT NULL REFERENCES code_trees(id),
          path TEXT NOT NULL,
          file_sha256 TEXT NOT NULL,
          language TEXT NOT NULL,
          size_bytes INTEGER NOT NULL CHECK (size_bytes >= 0),
          line_count INTEGER NOT NULL CHECK (line_count >= 0),
          UNIQUE (tree, path)
        );

        -- text is exactly lines start_line..end_line of the file, terminators included.
        CREATE TABLE code_chunks (
          id INTEGER PRIMARY KEY,
          file INTEGER NOT NULL REFERENCES code_files(id),
          start_line INTEGER NOT NULL CHECK (start_line >= 1),
          end_line INTEGER NOT NULL CHECK (end_line >= start_line),
          snippet_sha256 TEXT NOT NULL,
          text TEXT NOT NULL
        );
        CREATE INDEX code_chunks_by_file ON code_chunks (file);

        -- Its own index (rowid = code_chunks.id), never mixed with Atomic Memory's: identifier terms
        -- pre-split in Python; '_' stays inside a token so whole snake_case identifiers match.
        CREATE VIRTUAL TABLE code_fts USING fts5(
          scope_tag, path_terms, terms,
          tokenize = "unicode61 remove_diacritics 0 tokenchars '_'", content = '', contentless_delete = 1
        );
        -- Documents per term, read by queries to skip terms too common to rank by (no upkeep: FTS5 keeps it).
        CREATE VIRTUAL TABLE code_fts_vocab USING fts5vocab(code_fts, 'row');
        """,
    ),
    (
        6,
        """
        -- One embedding per code chunk when a provider is configured, tagged with its model like
        -- artifact_embeddings; removed with its chunk.
        CREATE TABLE code_chunk_embeddings (
          chunk INTEGER PRIMARY KEY REFERENCES code_chunks(id),
          model_id TEXT NOT NULL,
          vector BLOB NOT NULL
        );
        """,
    ),
    (
        7,
        """
        -- Reserved: OceanBase's packed full-text postings (fts_segments). No-op here: FTS5 keeps
        -- its own index. Recorded so both backends stay at the same version.
        """,
    ),
    (
        8,
        """
        -- When the revision's statement was true (RFC 3339, given by the writer: an import of a project's
        -- history keeps its dates). NULL means "when it was recorded": reads fall back to created_at, so
        -- existing rows need no rewrite.
        ALTER TABLE revisions ADD COLUMN observed_at TEXT;
        """,
    ),
    (
        9,
        """
        -- One FTS5 table per (index, Scope) (store/core/scope_fts.py), so BM25's statistics are the
        -- Scope's own. The shared tables go; the data step indexes every active head (and code chunk)
        -- again into its Scope's tables, from the stored text.
        DROP TABLE code_fts_vocab;
        DROP TABLE code_fts;
        DROP TABLE atomic_memory_fts;
        DROP TABLE topic_memory_fts;
        DROP TABLE experience_fts;
        """,
    ),
    (
        10,
        """
        -- Sources: exact evidence captured from agent sessions (prompts, replies, transcripts, notes),
        -- stored redacted (redactions lists what was replaced, never the secret). The extraction columns
        -- are the background worker's: a pending Source is claimed with a lease (lease_owner until
        -- lease_until) that another Server may take over once it expires.
        CREATE TABLE sources (
          id INTEGER PRIMARY KEY,
          scope_id TEXT NOT NULL REFERENCES scopes(scope_id),
          source_id TEXT NOT NULL,
          kind TEXT NOT NULL,
          content TEXT NOT NULL,
          content_digest TEXT NOT NULL,
          redactions TEXT NOT NULL DEFAULT '[]',
          origin_host TEXT,
          origin_session TEXT,
          origin_turn INTEGER,
          observed_at TEXT NOT NULL,
          created_at TEXT NOT NULL,
          status TEXT NOT NULL CHECK (status IN ('pending', 'done', 'failed', 'skipped')),
          reason TEXT,
          attempts INTEGER NOT NULL DEFAULT 0,
          lease_owner TEXT,
          lease_until TEXT,
          next_attempt_at TEXT,
          UNIQUE (scope_id, source_id)
        );
        CREATE INDEX sources_by_status ON sources (status, next_attempt_at);

        -- Lineage: the Sources an exact revision was written from.
        CREATE TABLE revision_sources (
          artifact INTEGER NOT NULL,
          revision INTEGER NOT NULL,
          source_row INTEGER NOT NULL REFERENCES sources(id),
          PRIMARY KEY (artifact, revision, source_row),
          FOREIGN KEY (artifact, revision) REFERENCES revisions(artifact, revision)
        ) WITHOUT ROWID;
        CREATE INDEX revision_sources_by_source ON revision_sources (source_row);
        """,
    ),
    (
        11,
        """
        -- Packed postings replace the per-Scope FTS5 tables (store/sqlite/packed.py, issue 39): a term's postings
        -- are a few blobs, so a search over a million memories ranks every query term. The data step drops
        -- the FTS5 tables and indexes every active head and code chunk again from the stored text.
        """
        + PACKED_SCHEMA,
    ),
    (
        12,
        """
        -- Tombstones of purged Artifacts: every revision's text was erased and the Artifact left every index;
        -- an exact read answers 410 purged.
        CREATE TABLE purged_artifacts (
          artifact INTEGER PRIMARY KEY REFERENCES artifacts(id),
          purged_at TEXT NOT NULL
        );
        """,
    ),
    (
        13,
        """
        -- A Scope's extraction policy: whether explicit and model-extracted writes apply at once or wait in
        -- the review inbox. No row: the Server's default (POWERCONTEXT_EXTRACTION_REVIEW).
        CREATE TABLE extraction_policies (
          scope_id TEXT PRIMARY KEY REFERENCES scopes(scope_id),
          explicit TEXT NOT NULL CHECK (explicit IN ('apply', 'review')),
          model TEXT NOT NULL CHECK (model IN ('apply', 'review')),
          updated_at TEXT NOT NULL
        ) WITHOUT ROWID;
        """,
    ),
    (
        14,
        """
        -- Tail rows of the packed index (store/sqlite/tails.py): a small write's postings in one row per index and
        -- Scope, moved into the per-term segments once a Scope has MAX_TAIL_ROWS of them.
        """
        + TAIL_SCHEMA,
    ),
    (
        15,
        """
        -- artifact_embeddings becomes a table with rowids. WITHOUT ROWID, a 1,536-byte vector overflowed its
        -- b-tree cell to a page of its own (4.7 KB per vector), and every key comparison of a lookup read that
        -- overflow: the vector matrix of a million-memory Scope took ~50 s to load and the embedding backlog
        -- (counted before a Server with a model serves) 27-29 s. With rowids a vector stays in its cell, the
        -- key lives in a small unique index, and the matrix reads its rows in ~3-5 s (~11 s with building it),
        -- walking the Scope's heads in rowid order (artifacts_by_scope_rowid), as the vectors were written; the
        -- backlog reads only the model index (store/core/embeddings.py). The old table's pages go back to the
        -- file's free list, not zeroed: they hold the vectors just copied (a purged memory's were zeroed at its
        -- purge), and zeroing 4.7 GB at a million memories took the upgrade from ~35 s to ~2 min and wrote as
        -- much again to the WAL.
        CREATE TABLE artifact_embeddings_v15 (
          artifact INTEGER NOT NULL,
          revision INTEGER NOT NULL,
          model_id TEXT NOT NULL,
          vector BLOB NOT NULL,
          UNIQUE (artifact, revision),
          FOREIGN KEY (artifact, revision) REFERENCES revisions(artifact, revision)
        );
        -- The rows move and the indexes are made by data_steps.vectors_with_rowids.
        """,
    ),
    (
        16,
        """
        -- Postings segments in columns, 8 bytes a posting instead of 20 (store/core/segment_codec.py): a search
        -- reads every segment of its terms, and reading was most of its time at a million memories. The
        -- segments are rewritten by data_steps.segments_in_columns.
        """,
    ),
]

LATEST_VERSION = MIGRATIONS[-1][0]


def apply_migrations(conn: Any, now: str) -> int:
    """Apply every pending migration, each in its own transaction. Returns the schema version."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
    applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
    for version, script in pending_migrations(MIGRATIONS, applied):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have applied it while this one waited for the write lock.
            if conn.execute("SELECT 1 FROM schema_migrations WHERE version = ?", (version,)).fetchone():
                conn.execute("COMMIT")
                continue
            for statement in _statements(script):
                conn.execute(statement)
            if version in DATA_STEPS:
                DATA_STEPS[version](conn)
            conn.execute("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)", (version, now))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        if version in DATA_STEPS:
            # A data step may rewrite much of the file (migration 15 at a million memories: ~2.5 GB through the
            # WAL); the WAL keeps its largest size until truncated.
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return LATEST_VERSION


def _statements(script: str) -> list[str]:
    lines = [line for line in script.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
