"""``FamilyStore`` and ``PromptStore`` for SQLite: the Topic Memory, Experience, Profile and Prompt mixins in one
base class.

``SqliteStore`` inherits it; each mixin writes through the store's serialized ``_write()`` transaction
and reads on its per-thread ``_reader()`` connection, so the families share the Atomic Memory guarantees.
"""

from __future__ import annotations

from powercontext.store.sqlite.experiences import SqliteExperiences
from powercontext.store.sqlite.profiles import SqliteProfiles
from powercontext.store.sqlite.prompts import SqlitePrompts
from powercontext.store.sqlite.topics import SqliteTopics

__all__ = ["SqliteFamilies"]


class SqliteFamilies(SqliteTopics, SqliteExperiences, SqliteProfiles, SqlitePrompts):
    """Everything of ``FamilyStore`` and ``PromptStore``; mixed into ``SqliteStore``."""
