"""Code evidence wire models: index a work tree, query it, read exact ranges."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field, StrictFloat, StrictInt

from powercontext.contract.common import NON_BLANK, CodeEvidenceRef, StrictModel, require_constants

DEFAULT_MAX_FILE_BYTES: Final = 1 << 20
MAX_MAX_FILE_BYTES: Final = 16 << 20
MAX_CODE_QUERY_CHARS: Final = 8192
MAX_CODE_QUERY_LIMIT: Final = 50
MAX_TREE_PATH_CHARS: Final = 4096


class CodeIndexRequest(StrictModel):
    path: str = Field(
        min_length=1,
        max_length=MAX_TREE_PATH_CHARS,
        description="A directory on the Server's file system (a git work tree or a plain directory); a relative"
        " path resolves against the Server's working directory. Never returned.",
    )
    max_file_bytes: StrictInt = Field(
        default=DEFAULT_MAX_FILE_BYTES,
        ge=1,
        le=MAX_MAX_FILE_BYTES,
        description="Files larger than this are skipped (counted in files_skipped_large).",
    )


class CodeIndexResult(StrictModel):
    """Counts of one indexing run. files_seen = indexed + unchanged + every skipped count."""

    fingerprint: str = Field(description="Stable id of the work tree within the Scope; cite it in snippet reads.")
    kind: Literal["git", "dir"] = Field(description="git: listed by git (ignore rules honoured); dir: walked.")
    files_seen: StrictInt
    files_indexed: StrictInt = Field(description="New or changed files, (re-)chunked in this run.")
    files_unchanged: StrictInt = Field(description="Files whose file_sha256 was already indexed.")
    files_removed: StrictInt = Field(description="Previously indexed files that are gone or no longer indexable.")
    files_skipped_binary: StrictInt = Field(description="A NUL byte in the first 8 KiB, or not UTF-8.")
    files_skipped_large: StrictInt = Field(
        description="Over max_file_bytes, or a line over 8 KiB (minified/generated)."
    )
    files_skipped_other: StrictInt = Field(description="Symlinks, special files, unreadable files, unciteable names.")
    chunks: StrictInt = Field(description="Chunks of this work tree in the index after the run.")


class CodeQueryRequest(StrictModel):
    query: str = Field(min_length=1, max_length=MAX_CODE_QUERY_CHARS, pattern=NON_BLANK)
    limit: StrictInt = Field(default=10, ge=1, le=MAX_CODE_QUERY_LIMIT)


class CodeQueryHit(StrictModel):
    code_evidence: CodeEvidenceRef
    language: str = Field(description='Detected from the file name, e.g. "python"; "text" when unknown.')
    text: str = Field(description="Exactly the cited lines, line terminators included, as indexed.")
    score: StrictFloat = Field(description="BM25 relevance; larger is better. Comparable within one response only.")


class CodeQueryResult(StrictModel):
    model_config = StrictModel.model_config | {"json_schema_extra": require_constants("mode")}

    mode: Literal["code"] = "code"
    hits: list[CodeQueryHit]


class CodeSnippetResult(StrictModel):
    code_evidence: CodeEvidenceRef = Field(description="snippet_sha256 is computed from the lines read now.")
    text: str = Field(description="Exactly lines start_line..end_line of the file on disk, terminators included.")
