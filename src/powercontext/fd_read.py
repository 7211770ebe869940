"""Reading a file descriptor up to a bound, for inputs that must not be read whole whatever their size."""

from __future__ import annotations

import os


def read_at_most(fd: int, limit: int) -> bytes:
    """The bytes of ``fd`` up to its end, but at most ``limit + 1`` of them: a result longer than ``limit`` tells
    the caller there was more, without reading it."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = os.read(fd, limit + 1 - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
