"""Who may read and write which Scopes: pure rules over Scope-id patterns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from powercontext.domain.errors import RequestRefused


def _matches(pattern: str, scope_id: str) -> bool:
    """``*`` alone matches every Scope; a trailing ``*`` matches a prefix; anything else matches exactly."""
    if pattern.endswith("*"):
        return scope_id.startswith(pattern[:-1])
    return pattern == scope_id


@dataclass(frozen=True)
class Principal:
    """A caller and its grants. Write implies read."""

    name: str
    read: tuple[str, ...]
    write: tuple[str, ...]

    def can_read(self, scope_id: str) -> bool:
        return any(_matches(p, scope_id) for p in (*self.read, *self.write))

    def can_write(self, scope_id: str) -> bool:
        return any(_matches(p, scope_id) for p in self.write)


# Without an access file the Server is a single-user local service: one principal that may do anything.
OPEN_ACCESS = Principal("local", ("*",), ("*",))


class ScopeForbidden(RequestRefused):
    code, status = "scope-forbidden", 403

    def __init__(self, action: str) -> None:
        super().__init__(f"this token may not {action} that Scope; ask for a grant in the access file")


class Unauthenticated(RequestRefused):
    code, status = "unauthenticated", 401
    headers: ClassVar[Mapping[str, str]] = {"WWW-Authenticate": "Bearer"}

    def __init__(self) -> None:
        super().__init__("send 'Authorization: Bearer <token>' with a token listed in the Server's access file")
