"""The client's errors, defined in ``powercontext.errors`` (which loads without the client) and re-exported here."""

from __future__ import annotations

from powercontext import errors as _errors
from powercontext.errors import *  # noqa: F403

__all__ = _errors.__all__
