"""What a Server base URL must look like, checked before any request is sent.

A URL without a scheme (``127.0.0.1:8765``) or with the API's own prefix (``http://host:8765/v1``) otherwise fails
far from its cause: as "no answer" or as "no such endpoint". The CLI and both SDK clients check the URL here, so
the message says what is wrong with it. Only the standard library is imported: the CLI checks ``--url`` before
it loads the client.
"""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["DEFAULT_URL", "BadServerUrl", "check_server_url"]

# Where a client looks for the Server when given no address (the Server's own default port).
DEFAULT_URL = "http://127.0.0.1:8765"
EXAMPLE = DEFAULT_URL


class BadServerUrl(ValueError):
    """A base URL no request can go to; the message says what to change."""


def check_server_url(url: str) -> str:
    """``url`` without a trailing ``/``, if it is an ``http``/``https`` URL with a host, a valid port and no
    ``/v1`` in its path; else ``BadServerUrl``. A path prefix (a Server behind a reverse proxy) is kept."""
    text = url.strip()
    if not text:
        raise BadServerUrl(f"the Server URL is empty; give one like {EXAMPLE}")
    if "://" not in text:
        shown = text.lstrip("/").rpartition("@")[2]  # never repeat credentials
        raise BadServerUrl(f"the Server URL has no scheme; write http://{shown} (e.g. {EXAMPLE})")
    odd = next((i for i, c in enumerate(text) if c.isspace() or not c.isprintable()), None)
    if odd is not None:
        raise BadServerUrl(f"the Server URL must not contain {_named(text[odd])} (character {odd + 1})")
    try:
        parts = urlsplit(text)
    except ValueError as exc:  # an unclosed "[", or a bracketed host that is no IP address
        raise BadServerUrl(_unparsable(text, exc)) from None
    if parts.scheme.lower() not in ("http", "https"):
        raise BadServerUrl(f"the Server URL must start with http:// or https:// (e.g. {EXAMPLE})")
    if not parts.hostname:
        brackets = " (an IPv6 host goes in brackets: http://[::1]:8765)" if parts.netloc.count(":") > 1 else ""
        raise BadServerUrl(f"the Server URL has no host (e.g. {EXAMPLE}){brackets}")
    bad = sorted({c for c in parts.hostname if c in _NOT_IN_A_HOST})
    if bad:
        shown = " ".join(repr(c) for c in bad)
        raise BadServerUrl(f"the Server URL's host must not contain {shown} (e.g. {EXAMPLE})")
    try:
        parts.port  # noqa: B018 - urlsplit checks the port only when it is read
    except ValueError:
        raise BadServerUrl("the Server URL's port must be a number from 1 to 65535") from None
    if parts.port == 0:
        raise BadServerUrl("the Server URL's port must be a number from 1 to 65535")
    if parts.query or parts.fragment:
        raise BadServerUrl("the Server URL must not have a query or a fragment; give the base URL, e.g. " + EXAMPLE)
    segments = [s for s in parts.path.split("/") if s]
    if "v1" in segments:
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        base = f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")
        raise BadServerUrl(f"the Server URL is the base, without /v1: use {base}")
    return text.rstrip("/")


# Characters RFC 3986 allows in no host name (whitespace and control characters are refused before).
_NOT_IN_A_HOST = frozenset('<>"{}|\\^`[]')


def _named(char: str) -> str:
    return "a space" if char == " " else f"a whitespace or control character ({char!r})"


def _unparsable(text: str, exc: ValueError) -> str:
    netloc = text.partition("://")[2].partition("/")[0].rpartition("@")[2]  # never repeat credentials
    if "[" in netloc and "]" not in netloc:
        return "the Server URL opens an IPv6 host with '[' but never closes it; write it like http://[::1]:8765"
    if "[" in netloc:
        return f"the Server URL's bracketed host is not an IPv6 address: {netloc} (write it like http://[::1]:8765)"
    return f"the Server URL cannot be parsed ({exc}); give one like {EXAMPLE}"
