"""Exact reads of cited ranges, verified against the file on disk now."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from powercontext.code.errors import CodeChanged, InvalidCodePath, InvalidLineRange
from powercontext.code.lines import file_sha256, snippet_sha256, split_lines
from powercontext.code.paths import ReadOutcome, is_valid_relative_path, read_tree_file
from powercontext.domain.identity import CodeRangeText
from powercontext.store.code import CodeStore
from powercontext.store.errors import CodeNotFound


@dataclass(frozen=True, slots=True)
class CodeSnippet(CodeRangeText):
    """Lines of an indexed file as read from disk now, the file still having the cited ``file_sha256``."""


def check_relative_path(path: str) -> None:
    """Raises ``InvalidCodePath`` unless ``path`` is a valid repository-relative path."""
    if not is_valid_relative_path(path):
        raise InvalidCodePath(
            "path must be relative to the work tree, '/'-separated, without '..', '.', empty components,"
            " backslashes or control characters"
        )


def read_snippet(
    store: CodeStore,
    scope_id: str,
    fingerprint: str,
    path: str,
    file_sha256_expected: str,
    start_line: int,
    end_line: int,
    *,
    allow_hardlinks: bool = False,
) -> CodeSnippet:
    """Lines ``start_line..end_line`` of an indexed file, when the file on disk still hashes to
    ``file_sha256_expected``.

    Only files in the tree's index can be read (an ignored ``.env`` stays unreadable). Raises
    ``InvalidCodePath``, ``InvalidLineRange``, ``CodeNotFound`` (unknown tree or path, or a range past the
    end of the file) and ``CodeChanged`` (the disk no longer has that file, or it is now a symlink or, unless
    ``allow_hardlinks``, a file with more than one hard link).
    """
    check_relative_path(path)
    if end_line < start_line:
        raise InvalidLineRange()
    tree = store.get_code_tree(scope_id, fingerprint)
    store.get_code_file(scope_id, fingerprint, path)
    read = read_tree_file(Path(tree.root_path), path, tree.max_file_bytes, allow_hardlinks=allow_hardlinks)
    if read.outcome is not ReadOutcome.OK:
        raise CodeChanged(None)
    current = file_sha256(read.data)
    if current != file_sha256_expected:
        raise CodeChanged(current)
    lines = split_lines(read.data)
    if end_line > len(lines):
        raise CodeNotFound(f"the file has {len(lines)} lines; the range must end at or before the last one")
    try:
        text = b"".join(lines[start_line - 1 : end_line]).decode("utf-8")
    except UnicodeDecodeError as exc:  # same hash as a cited file, which was UTF-8: cannot happen
        raise CodeChanged(current) from exc
    return CodeSnippet(
        scope_id, fingerprint, path, current, start_line, end_line, snippet_sha256(lines, start_line, end_line), text
    )
