"""Query normalization shared by search and the Receipt's ``query_digest``."""

from __future__ import annotations

import hashlib
import unicodedata


class NormalizedQuery(str):
    """A query already normalized; ``normalize_query`` returns it as is, so one prepare normalizes once."""

    __slots__ = ()


def normalize_query(query: str) -> NormalizedQuery:
    """NFC of the trimmed query. No length check: the request bound is in characters, not bytes."""
    if isinstance(query, NormalizedQuery):
        return query
    return NormalizedQuery(unicodedata.normalize("NFC", query.strip()))


def sha256_digest(data: str | bytes) -> str:
    """``sha256:<hex>`` of the UTF-8 encoding of ``data``."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def query_digest(query: str) -> str:
    return sha256_digest(normalize_query(query))
