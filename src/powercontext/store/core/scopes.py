"""Scopes: create, update (with kept references), read and list; the same statements on every backend."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from powercontext.store.base import ScopeEdit, ScopeRecord
from powercontext.store.core.connections import StoreConnections
from powercontext.store.core.driver import sqlite
from powercontext.store.core.family_rows import now as _now
from powercontext.store.errors import InvalidReference, ReferencedScopeNotFound, ScopeExists, ScopeNotFound


class Scopes(StoreConnections):
    """The Scope part of ``Store``; mixed into ``SqlStore``."""

    def create_scope(self, scope_id: str, title: str, context_references: Sequence[str]) -> ScopeRecord:
        now = _now()
        with self._write() as conn:
            self._check_references(conn, scope_id, context_references)
            try:
                conn.execute(
                    "INSERT INTO scopes (scope_id, title, context_references, created_at, updated_at)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (scope_id, title, json.dumps(list(context_references)), now, now),
                )
            except sqlite.IntegrityError as exc:
                raise ScopeExists() from exc
        return ScopeRecord(scope_id, title, tuple(context_references), now, now)

    def update_scope(self, scope_id: str, edit: ScopeEdit, keep: Callable[[str], bool] | None = None) -> ScopeRecord:
        title, context_references = edit.title, edit.context_references
        now = _now()
        with self._write() as conn:
            row = conn.execute(
                "SELECT created_at, context_references FROM scopes WHERE scope_id = ?", (scope_id,)
            ).fetchone()
            if row is None:
                raise ScopeNotFound(scope_id)
            self._check_references(conn, scope_id, context_references)
            # Read and rewritten in one transaction, so a concurrent update cannot lose a kept reference.
            kept = [r for r in json.loads(row[1]) if keep is not None and keep(r) and r not in context_references]
            references = [*context_references, *kept]
            conn.execute(
                "UPDATE scopes SET title = ?, context_references = ?, updated_at = ? WHERE scope_id = ?",
                (title, json.dumps(references), now, scope_id),
            )
        return ScopeRecord(scope_id, title, tuple(references), row[0], now)

    @staticmethod
    def _check_references(conn: Any, scope_id: str, references: Sequence[str]) -> None:
        for index, ref in enumerate(references):
            if ref == scope_id:
                raise InvalidReference()
            if conn.execute("SELECT 1 FROM scopes WHERE scope_id = ?", (ref,)).fetchone() is None:
                raise ReferencedScopeNotFound(index, ref)

    def get_scope(self, scope_id: str) -> ScopeRecord:
        row = (
            self._reader()
            .execute(
                "SELECT scope_id, title, context_references, created_at, updated_at FROM scopes WHERE scope_id = ?",
                (scope_id,),
            )
            .fetchone()
        )
        if row is None:
            raise ScopeNotFound(scope_id)
        return ScopeRecord(row[0], row[1], tuple(json.loads(row[2])), row[3], row[4])

    def list_scopes(self) -> list[ScopeRecord]:
        rows = (
            self._reader()
            .execute("SELECT scope_id, title, context_references, created_at, updated_at FROM scopes ORDER BY scope_id")
            .fetchall()
        )
        return [ScopeRecord(r[0], r[1], tuple(json.loads(r[2])), r[3], r[4]) for r in rows]
