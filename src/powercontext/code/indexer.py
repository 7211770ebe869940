"""Incremental indexing of one work tree into a ``CodeStore``.

Files are read, hashed and chunked outside any transaction, then written in batches of
``BATCH_FILES`` files (or ``BATCH_BYTES`` of text), one transaction each, so a large tree never holds
the writer lock for the whole run. A file whose ``file_sha256`` is already indexed is skipped; a
changed file has its chunks replaced; indexed files that are no longer candidates (deleted, now
ignored, binary, too large, a symlink or hard-linked) are removed in the final transaction, which only runs once
every batch succeeded. A failed run therefore leaves each file at either its previous or its new
index state, and removes nothing; running it again completes it. A failed first run of a tree leaves
no registration behind: the tree, with whatever batches it wrote, is forgotten.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Final, Literal

from powercontext.code.chunking import MAX_CHUNK_BYTES, chunk_lines
from powercontext.code.discovery import MAX_FILES, TreeKind, list_files, open_work_tree
from powercontext.code.fingerprint import fingerprint
from powercontext.code.identifiers import identifier_terms, path_terms
from powercontext.code.language import detect_language
from powercontext.code.lines import file_sha256, snippet_sha256, split_lines, split_text_lines
from powercontext.code.paths import ReadOutcome, is_valid_relative_path, read_tree_file
from powercontext.contract.code import DEFAULT_MAX_FILE_BYTES, CodeIndexResult
from powercontext.store.base import Embedding
from powercontext.store.code import CodeStore, NewCodeChunk, NewCodeFile
from powercontext.store.errors import CodeNotFound

# A line longer than a chunk cannot be cited whole: such files are minified or generated.
MAX_LINE_BYTES: Final = MAX_CHUNK_BYTES
BINARY_SNIFF_BYTES: Final = 8 * 1024
BATCH_FILES: Final = 200
BATCH_BYTES: Final = 4 << 20

ProgressCallback = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What one indexing run did. ``files_seen`` = indexed + unchanged + every skipped count; ``chunks`` is
    the tree's chunk count after the run."""

    fingerprint: str
    kind: TreeKind
    files_seen: int
    files_indexed: int
    files_unchanged: int
    files_removed: int
    files_skipped_binary: int
    files_skipped_large: int
    files_skipped_other: int
    chunks: int

    def to_wire(self) -> CodeIndexResult:
        return CodeIndexResult(**asdict(self))


class CodeIndexer:
    """Registers and (re-)indexes work trees of a Scope."""

    def __init__(
        self,
        store: CodeStore,
        *,
        batch_files: int = BATCH_FILES,
        max_files: int = MAX_FILES,
        embed: Callable[[Sequence[str]], list[Embedding | None]] | None = None,
        roots: Sequence[Path] | None = None,
        allow_hardlinks: bool = False,
        indexed: Callable[[str], None] | None = None,
    ) -> None:
        """``embed`` (e.g. ``GuardedEmbedder.embed_for_write``) gives each new chunk its vector, stored with it;
        without it chunks are stored with none, and ``indexed`` (called after each index) can hand them to whatever
        embeds them later (the Server's ``CodeVectorFill``), with the Scope.

        ``roots`` confines indexing to these directories (an empty sequence: none at all); ``None`` lets
        it index any directory this process can read, except ``/proc``, ``/sys`` and ``/dev``. Files with
        more than one hard link are skipped (counted in ``files_skipped_other``) unless ``allow_hardlinks``.
        """
        self._store = store
        self._embed = embed
        self._roots = None if roots is None else tuple(roots)
        self._batch_files = batch_files
        self._max_files = max_files
        self._allow_hardlinks = allow_hardlinks
        self._indexed = indexed

    def index(
        self,
        scope_id: str,
        path: Path,
        *,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        progress: ProgressCallback | None = None,
    ) -> IndexReport:
        """Index the directory at ``path`` (relative paths resolve against the current directory).

        Raises ``CodeRootForbidden`` (outside the roots, or a kernel file system), ``InvalidCodePath`` (not a
        readable directory), ``CodeTreeTooLarge``, ``ScopeNotFound``; nothing is registered then. ``progress``
        is called with ``(done, total)`` candidate files after each file.
        """
        tree = open_work_tree(path, self._roots)
        fp = fingerprint(scope_id, tree)
        paths = list_files(tree, self._max_files)
        try:
            self._store.get_code_tree(scope_id, fp)
            first_run = False
        except CodeNotFound:
            first_run = True
        self._store.register_code_tree(scope_id, fp, tree.kind, str(tree.root), max_file_bytes)
        try:
            report = self._index_files(scope_id, fp, tree.kind, tree.root, paths, max_file_bytes, progress)
        except BaseException:  # an interrupted CLI run too
            if first_run:
                # Best effort: the original failure is what the caller must see.
                with contextlib.suppress(Exception):
                    self._store.forget_code_tree(scope_id, fp)
            raise
        if self._indexed is not None:
            self._indexed(scope_id)
        return report

    def _index_files(
        self,
        scope_id: str,
        fp: str,
        kind: TreeKind,
        root: Path,
        paths: list[str],
        max_file_bytes: int,
        progress: ProgressCallback | None,
    ) -> IndexReport:
        known = self._store.code_file_hashes(scope_id, fp)
        counts: Counter[Outcome] = Counter()
        kept: set[str] = set()
        batch: list[NewCodeFile] = []
        batch_bytes = 0
        total = len(paths)
        for done, relative in enumerate(paths, start=1):
            outcome, new = _prepare_file(root, relative, max_file_bytes, known.get(relative), self._allow_hardlinks)
            counts[outcome] += 1
            if outcome in ("indexed", "unchanged"):
                kept.add(relative)
            if new is not None:
                batch.append(new)
                batch_bytes += new.size_bytes
                if len(batch) >= self._batch_files or batch_bytes >= BATCH_BYTES:
                    self._store.put_code_files(scope_id, fp, self._embedded(batch))
                    batch, batch_bytes = [], 0
            if progress is not None:
                progress(done, total)
        if batch:
            self._store.put_code_files(scope_id, fp, self._embedded(batch))
        removed = sorted(p for p in known if p not in kept)
        chunks = self._store.finish_code_index(scope_id, fp, removed)
        return IndexReport(
            fingerprint=fp,
            kind=kind,
            files_seen=total - counts["missing"],
            files_indexed=counts["indexed"],
            files_unchanged=counts["unchanged"],
            files_removed=len(removed),
            files_skipped_binary=counts["binary"],
            files_skipped_large=counts["large"],
            files_skipped_other=counts["other"],
            chunks=chunks,
        )

    def _embedded(self, batch: list[NewCodeFile]) -> list[NewCodeFile]:
        """The batch with each chunk's embedding, in one provider pass (unchanged when there is no provider)."""
        if self._embed is None:
            return batch
        embeddings = iter(self._embed([c.text for f in batch for c in f.chunks]))
        return [replace(f, chunks=tuple(replace(c, embedding=next(embeddings)) for c in f.chunks)) for f in batch]


Outcome = Literal["indexed", "unchanged", "missing", "binary", "large", "other"]


def _prepare_file(
    root: Path, relative: str, max_bytes: int, known_sha256: str | None, allow_hardlinks: bool
) -> tuple[Outcome, NewCodeFile | None]:
    """One candidate's outcome, and its new index entry when it has to be (re-)written."""
    if not is_valid_relative_path(relative):  # not UTF-8, or unciteable (a backslash, a control character)
        return "other", None
    read = read_tree_file(root, relative, max_bytes, allow_hardlinks=allow_hardlinks)
    if read.outcome is ReadOutcome.MISSING:
        return "missing", None
    if read.outcome is ReadOutcome.TOO_LARGE:
        return "large", None
    if read.outcome is not ReadOutcome.OK:
        return "other", None
    data = read.data
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return "binary", None
    digest = file_sha256(data)
    if digest == known_sha256:
        return "unchanged", None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "binary", None
    byte_lines = split_lines(data)
    if any(len(line) > MAX_LINE_BYTES for line in byte_lines):
        return "large", None
    lines = split_text_lines(text)
    language = detect_language(relative, lines[0] if lines else "")
    chunks = []
    for span in chunk_lines(lines, language):
        chunk_text = "".join(span.of(lines))
        chunks.append(
            NewCodeChunk(
                start_line=span.start_line,
                end_line=span.end_line,
                snippet_sha256=snippet_sha256(byte_lines, span.start_line, span.end_line),
                text=chunk_text,
                terms=" ".join(identifier_terms(chunk_text)),
            )
        )
    new = NewCodeFile(
        path=relative,
        file_sha256=digest,
        language=language,
        size_bytes=len(data),
        line_count=len(byte_lines),
        path_terms=" ".join(path_terms(relative)),
        chunks=tuple(chunks),
    )
    return "indexed", new
