"""Which migrations a database still needs: the rule both stores' migration runners share."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TypeVar

from powercontext.store.errors import SchemaTooNew

Step = TypeVar("Step")


def pending_migrations(migrations: Sequence[tuple[int, Step]], applied: Collection[int]) -> list[tuple[int, Step]]:
    """Every migration not yet applied, in order: not only those above the newest applied one, since a database
    made while a feature's migration number was still reserved may lack it. A database newer than this code
    (a version above the last migration) is refused: this code would misread it."""
    latest = migrations[-1][0]
    newest = max(applied, default=0)
    if newest > latest:
        raise SchemaTooNew(
            f"the store was written by a newer PowerContext (schema version {newest}; this one knows up to"
            f" {latest}); upgrade PowerContext (pip install -U powercontext), or choose another store"
        )
    return [(version, step) for version, step in migrations if version not in applied]
