"""Search terms for code: identifiers split on snake_case, camelCase and digits.

``parseHTTPResponse2`` yields ``parsehttpresponse2`` (the whole identifier, lower-cased) and its
parts ``parse``, ``http``, ``response``, ``2``. Each alphabetic part also yields its English stem
when that differs (``parse`` → ``pars``), so a query saying "parsing" finds ``parseResponse``.
Terms are lower-case runs of letters, digits and ``_``: the FTS table keeps ``_`` inside a token.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

from powercontext.text.tokenize import terms as text_terms

MAX_QUERY_TERMS: Final = 32
# Longer "identifiers" are hashes, base64 or minified blobs: noise for search.
MAX_TOKEN_CHARS: Final = 80

_TOKEN = re.compile(r"\w+")
_ASCII_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_UNICODE_PART = re.compile(r"\d+|[^\W\d_]+")


def split_identifier(token: str) -> list[str]:
    """The lower-cased parts of one identifier: ``parseHTTPResponse2`` → parse, http, response, 2."""
    parts: list[str] = []
    for piece in token.split("_"):
        if not piece:
            continue
        if piece.isascii():
            parts.extend(p.lower() for p in _ASCII_PART.findall(piece))
        else:
            # Case boundaries of other scripts are not split; letters and digits still are.
            parts.extend(p.casefold() for p in _UNICODE_PART.findall(piece))
    return parts


@lru_cache(maxsize=65536)
def _token_terms(token: str) -> tuple[str, ...]:
    parts = split_identifier(token)
    if not parts:
        return ()
    out: list[str] = []
    whole = token.casefold()
    if len(parts) > 1 or parts[0] != whole:
        out.append(whole)
    for part in parts:
        out.append(part)
        if not part.isdigit():
            stemmed = text_terms(part)
            if len(stemmed) == 1 and stemmed[0] != part:
                out.append(stemmed[0])
    return tuple(out)


def identifier_terms(text: str) -> list[str]:
    """Index terms of ``text`` in order, repeats kept (term frequency matters to BM25)."""
    out: list[str] = []
    for token in _TOKEN.findall(text):
        if len(token) <= MAX_TOKEN_CHARS:
            out.extend(_token_terms(token))
    return out


def path_terms(path: str) -> list[str]:
    """Terms of a repository-relative path: every component, split like identifiers (``.``, ``-`` and ``/`` too)."""
    return identifier_terms(path)


def code_query_terms(query: str, limit: int = MAX_QUERY_TERMS) -> list[str]:
    """Distinct terms of a query, first occurrences first, capped so a huge query stays cheap."""
    seen: dict[str, None] = {}
    for term in identifier_terms(query):
        seen.setdefault(term, None)
        if len(seen) >= limit:
            break
    return list(seen)
