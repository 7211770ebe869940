"""Byte-safe UTF-8 truncation."""

from __future__ import annotations

ELLIPSIS = "…"
ELLIPSIS_BYTES = len(ELLIPSIS.encode("utf-8"))


def truncate_utf8(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding fits ``max_bytes``; never splits a code point."""
    if max_bytes <= 0:
        return ""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text
    # errors="ignore" drops only the partial trailing sequence left by the byte cut.
    return raw[:max_bytes].decode("utf-8", errors="ignore")


def truncate_with_ellipsis(text: str, max_bytes: int) -> str:
    """A prefix plus ``…`` within ``max_bytes`` bytes in total (the ellipsis counts)."""
    return truncate_utf8(text, max_bytes - ELLIPSIS_BYTES) + ELLIPSIS
