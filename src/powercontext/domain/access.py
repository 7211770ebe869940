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
    """A caller and its grants. Write implies read. Index (having the Server read a directory of its own
    file system into a Scope's code evidence) is a grant of its own: write does not imply it, and it
    implies nothing else. ``metrics`` is not about a Scope: it lets the caller read ``GET /metrics``."""

    name: str
    read: tuple[str, ...]
    write: tuple[str, ...]
    index: tuple[str, ...] = ()
    metrics: bool = False  # may read the Server's Prometheus metrics (GET /metrics)
    # May delete a whole Scope (DELETE /v1/scopes/{id}): a grant of its own, implied by no other.
    delete: tuple[str, ...] = ()

    def can_read(self, scope_id: str) -> bool:
        return any(_matches(p, scope_id) for p in (*self.read, *self.write))

    def can_write(self, scope_id: str) -> bool:
        return any(_matches(p, scope_id) for p in self.write)

    def can_index(self, scope_id: str) -> bool:
        return any(_matches(p, scope_id) for p in self.index)

    def can_delete(self, scope_id: str) -> bool:
        return any(_matches(p, scope_id) for p in self.delete)


# Without an access file the Server is a single-user local service: one principal that may do anything
# (indexing is still confined to the operator's POWERCONTEXT_CODE_ROOTS).
OPEN_ACCESS = Principal("local", ("*",), ("*",), ("*",), metrics=True, delete=("*",))


class ScopeForbidden(RequestRefused):
    code, status = "scope-forbidden", 403

    def __init__(self, action: str, grant: str) -> None:
        super().__init__(f"this token may not {action} that Scope; ask for {grant_named(grant)} in the access file")


def grant_named(grant: str) -> str:
    """``a 'write' grant``, ``an 'index' grant``: the article follows the grant's name."""
    return f"{'an' if grant[:1] in 'aeiou' else 'a'} {grant!r} grant"


class Unauthenticated(RequestRefused):
    code, status = "unauthenticated", 401
    headers: ClassVar[Mapping[str, str]] = {"WWW-Authenticate": "Bearer"}

    def __init__(self) -> None:
        super().__init__("send 'Authorization: Bearer <token>' with a token listed in the Server's access file")


class MetricsForbidden(RequestRefused):
    code, status = "metrics-forbidden", 403

    def __init__(self) -> None:
        super().__init__('this token may not read the Server\'s metrics; ask for "metrics": true in the access file')
