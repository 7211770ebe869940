"""Code evidence failures, each mapped by the server to one stable HTTP error code.

Messages never carry a path, file content or query text: a caller already knows what it sent.
"""

from __future__ import annotations

# Why a kernel file system is refused: to the Server and to the in-process CLI alike (``code.confine``).
NEVER_INDEXED = "/proc, /sys and /dev are never indexed"


class CodeError(Exception):
    """Base class. ``code`` is the stable error code a client sees."""

    code = "code-error"
    status = 500


class InvalidCodePath(CodeError):
    code, status = "invalid-code-path", 422


class CodeRootForbidden(CodeError):
    """The path is not one this caller may index: outside the operator's code roots, or a kernel file system."""

    code, status = "code-root-forbidden", 403


class InvalidLineRange(CodeError):
    code, status = "invalid-line-range", 422

    def __init__(self) -> None:
        super().__init__("end_line must be greater than or equal to start_line")


class CodeTreeTooLarge(CodeError):
    code, status = "code-tree-too-large", 422

    def __init__(self, limit: int) -> None:
        super().__init__(f"the work tree has more than {limit} files; index a narrower directory")


class CodeChanged(CodeError):
    """The file on disk is no longer the one the caller cited. ``current_file_sha256`` is ``None`` when the
    file is gone or has become unreadable, too large or a symlink."""

    code, status = "code-changed", 409

    def __init__(self, current_file_sha256: str | None) -> None:
        if current_file_sha256 is None:
            message = "the file is no longer a readable file of this work tree; re-index and query again"
        else:
            message = (
                f"the file changed since it was cited; its current file_sha256 is {current_file_sha256};"
                " re-index and query again for current ranges"
            )
        super().__init__(message)
        self.current_file_sha256 = current_file_sha256


class CodeUnavailable(CodeError):
    code, status = "code-unavailable", 503

    def __init__(self) -> None:
        super().__init__("this server's store does not keep code evidence")
