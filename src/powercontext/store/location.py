"""Where the store lives: one URL names the backend and its address.

``sqlite:///path/to/file.db`` (the default), ``seekdb:///path/to/dir`` (embedded seekdb, data in a local
directory) or ``oceanbase://user@host:port/database`` (a seekdb server or an OceanBase cluster over the
MySQL protocol). The password never appears in the URL: it comes from ``POWERCONTEXT_STORE_PASSWORD``.

The OceanBase URLs take ``?fulltext=native`` and ``?vectors=native`` to create a new database that searches with
the engine's own ``FULLTEXT`` index or ``VECTOR(n)`` columns (store/oceanbase/native_*.py); a seekdb URL also takes
``?database=<name>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, unquote, urlsplit

Backend = Literal["sqlite", "seekdb", "oceanbase"]
Native = Literal["exact", "native"]
DEFAULT_DATABASE = "powercontext"
_DATABASE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class BadStoreUrl(ValueError):
    """The store URL is malformed; the message says what a valid one looks like (never the password)."""


@dataclass(frozen=True, slots=True)
class StoreLocation:
    backend: Backend
    path: Path | None = None  # sqlite file or seekdb directory
    host: str = ""
    port: int = 0
    user: str = ""
    database: str = DEFAULT_DATABASE
    fulltext: Native = "exact"  # what a new OceanBase database is created with
    vectors: Native = "exact"

    def display(self) -> str:
        """A loggable form (no password is ever part of a location)."""
        options = []
        if self.backend == "seekdb" and self.database != DEFAULT_DATABASE:
            options.append(f"database={self.database}")
        if self.fulltext != "exact":
            options.append(f"fulltext={self.fulltext}")
        if self.vectors != "exact":
            options.append(f"vectors={self.vectors}")
        suffix = "?" + "&".join(options) if options else ""
        if self.backend == "oceanbase":
            return f"oceanbase://{self.user}@{self.host}:{self.port}/{self.database}{suffix}"
        return f"{self.backend}://{self.path}{suffix}"


_EXAMPLES = "sqlite:///path/file.db, seekdb:///path/dir or oceanbase://user@host:port/database"


def _options(scheme: str, query: str) -> dict[str, str]:
    """The URL's query parameters, checked: ``database`` (seekdb) and ``fulltext`` (seekdb, oceanbase)."""
    allowed = {"sqlite": (), "seekdb": ("database", "fulltext", "vectors"), "oceanbase": ("fulltext", "vectors")}[
        scheme
    ]
    options: dict[str, str] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key not in allowed or key in options:
            shown = " and ".join(f"?{name}=" for name in allowed) or "none"
            raise BadStoreUrl(f"unknown or repeated store URL parameter {key!r}; a {scheme} URL takes {shown}")
        options[key] = value
    if "database" in options and not _DATABASE_NAME.match(options["database"]):
        raise BadStoreUrl("the database name may hold only letters, digits and '_'")
    for key in ("fulltext", "vectors"):
        if options.get(key, "exact") not in ("exact", "native"):
            raise BadStoreUrl(f"?{key}= is exact (the default) or native")
    return options


def parse_store_url(url: str) -> StoreLocation:
    """Parse a store URL; raises ``BadStoreUrl`` naming the valid forms."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in ("sqlite", "seekdb", "oceanbase"):
        raise BadStoreUrl(f"unknown store URL scheme {scheme!r}; use {_EXAMPLES}")
    if "#" in url:
        # Read as a URL, the rest would be a fragment: dropped, and another store (the path cut there) opened.
        raise BadStoreUrl(
            "a store URL cannot hold '#'; in a path write '#' as %23 ('?' as %3F, '%' as %25), or give the"
            " SQLite file with --db PATH"
        )
    options = _options(scheme, parts.query)
    fulltext: Native = "native" if options.get("fulltext") == "native" else "exact"
    vectors: Native = "native" if options.get("vectors") == "native" else "exact"
    if scheme in ("sqlite", "seekdb"):
        if parts.netloc or not parts.path or parts.path == "/":
            raise BadStoreUrl(f"a {scheme} URL needs an absolute path after three slashes; use {_EXAMPLES}")
        path = Path(unquote(parts.path)).expanduser()
        database = options.get("database", DEFAULT_DATABASE)
        return StoreLocation(
            scheme,  # type: ignore[arg-type]
            path=path,
            database=database,
            fulltext=fulltext,
            vectors=vectors,
        )
    if parts.password is not None:
        raise BadStoreUrl("put the password in POWERCONTEXT_STORE_PASSWORD, not in the store URL")
    try:
        port = parts.port or 2881
    except ValueError:
        raise BadStoreUrl(f"the port is not a number; use {_EXAMPLES}") from None
    database = parts.path.lstrip("/") or DEFAULT_DATABASE
    if not parts.hostname or not parts.username:
        raise BadStoreUrl(f"an oceanbase URL needs a user and a host; use {_EXAMPLES}")
    if not _DATABASE_NAME.match(database):
        raise BadStoreUrl("the database name may hold only letters, digits and '_'")
    return StoreLocation(
        "oceanbase",
        host=parts.hostname,
        port=port,
        user=unquote(parts.username),
        database=database,
        fulltext=fulltext,
        vectors=vectors,
    )
