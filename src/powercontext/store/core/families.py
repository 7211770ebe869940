"""``FamilyStore`` and ``PromptStore`` for both stores: the Topic Memory, Experience, Profile and Prompt mixins in one
base class.

``core.store.SqlStore`` inherits it; each mixin writes through the store's serialized ``_write()`` transaction
and reads on its per-thread ``_reader()`` connection, so the families share the Atomic Memory guarantees.
"""

from __future__ import annotations

from powercontext.store.core.experiences import Experiences
from powercontext.store.core.profiles import Profiles
from powercontext.store.core.prompts import Prompts
from powercontext.store.core.topics import Topics

__all__ = ["Families"]


class Families(Topics, Experiences, Profiles, Prompts):
    """Everything of ``FamilyStore`` and ``PromptStore``; mixed into ``SqlStore``."""
