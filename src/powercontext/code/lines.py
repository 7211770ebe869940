"""Lines and the two digests of code evidence.

A line ends after each ``\\n`` and keeps its terminator (``\\r\\n`` stays whole); a final line
without a terminator is still a line. Lines are numbered from 1; ranges are inclusive.

* ``file_sha256`` = ``"sha256:" + hex(sha256(file bytes))``
* ``snippet_sha256`` = ``"sha256:" + hex(sha256(bytes of lines start..end, terminators included))``;
  the bytes are the UTF-8 of the range's text, which is exactly what a chunk injects.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence


def split_lines(data: bytes) -> list[bytes]:
    """``data`` as lines, each keeping its ``\\n``; ``b"".join(split_lines(d)) == d``."""
    parts = data.split(b"\n")
    last = parts.pop()
    lines = [part + b"\n" for part in parts]
    if last:
        lines.append(last)
    return lines


def split_text_lines(text: str) -> list[str]:
    """The ``str`` twin of ``split_lines``: the same boundaries, since UTF-8 never hides a ``\\n`` byte."""
    parts = text.split("\n")
    last = parts.pop()
    lines = [part + "\n" for part in parts]
    if last:
        lines.append(last)
    return lines


def sha256_hex(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def file_sha256(data: bytes) -> str:
    """``sha256:<hex>`` of the whole file's bytes."""
    return sha256_hex(data)


def snippet_sha256(lines: Sequence[bytes], start_line: int, end_line: int) -> str:
    """``sha256:<hex>`` of lines ``start_line..end_line`` (1-based, inclusive) with their terminators."""
    return sha256_hex(b"".join(lines[start_line - 1 : end_line]))
