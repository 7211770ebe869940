"""Where the store lives: one URL names the backend and its address.

``sqlite:///path/to/file.db`` (the default), ``seekdb:///path/to/dir`` (embedded seekdb, data in a local
directory) or ``oceanbase://user@host:port/database`` (a seekdb server or an OceanBase cluster over the
MySQL protocol). The password never appears in the URL: it comes from ``POWERCONTEXT_STORE_PASSWORD``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit

Backend = Literal["sqlite", "seekdb", "oceanbase"]
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

    def display(self) -> str:
        """A loggable form (no password is ever part of a location)."""
        if self.backend == "oceanbase":
            return f"oceanbase://{self.user}@{self.host}:{self.port}/{self.database}"
        suffix = "" if self.backend == "sqlite" or self.database == DEFAULT_DATABASE else f"?database={self.database}"
        return f"{self.backend}://{self.path}{suffix}"


_EXAMPLES = "sqlite:///path/file.db, seekdb:///path/dir or oceanbase://user@host:port/database"


def parse_store_url(url: str) -> StoreLocation:
    """Parse a store URL; raises ``BadStoreUrl`` naming the valid forms."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme in ("sqlite", "seekdb"):
        if parts.netloc or not parts.path or parts.path == "/":
            raise BadStoreUrl(f"a {scheme} URL needs an absolute path after three slashes; use {_EXAMPLES}")
        database = DEFAULT_DATABASE
        if parts.query:
            key, _, value = parts.query.partition("=")
            if key != "database" or not _DATABASE_NAME.match(value) or scheme == "sqlite":
                raise BadStoreUrl("the only query parameter is ?database=<name> on a seekdb URL")
            database = value
        path = Path(unquote(parts.path)).expanduser()
        return StoreLocation(scheme, path=path, database=database)  # type: ignore[arg-type]
    if scheme == "oceanbase":
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
            "oceanbase", host=parts.hostname, port=port, user=unquote(parts.username), database=database
        )
    raise BadStoreUrl(f"unknown store URL scheme {scheme!r}; use {_EXAMPLES}")
