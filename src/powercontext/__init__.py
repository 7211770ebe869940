"""PowerContext: a context runtime for AI agents.

``from powercontext import PowerContextClient, SyncPowerContextClient, PrepareContextRequest`` gives the
typed SDK. The names below are imported explicitly for type checkers and IDEs (``py.typed`` ships with
the package), but at run time each loads on first use: importing httpx and pydantic eagerly would cost
the ``powercontext`` command and the agent-host hook (which share this package and run on every prompt)
about a second on a busy machine, for names they never touch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    from powercontext.client import PowerContextClient
    from powercontext.client.sync import SyncPowerContextClient
    from powercontext.contract.memory import (
        AtomicMemory,
        AtomicMemoryBatchItem,
        AtomicMemoryCreate,
        AtomicMemoryCreated,
        AtomicMemoryHit,
        AtomicMemoryList,
        AtomicMemorySearchResult,
    )
    from powercontext.contract.prepare import PrepareContextRequest, PreparedContext
    from powercontext.contract.scopes import Scope
    from powercontext.errors import (
        ClientClosed,
        Conflict,
        Forbidden,
        InvalidRequest,
        NotFound,
        PowerContextError,
        Unavailable,
    )
    from powercontext.server_url import BadServerUrl

__all__ = [
    "AtomicMemory",
    "AtomicMemoryBatchItem",
    "AtomicMemoryCreate",
    "AtomicMemoryCreated",
    "AtomicMemoryHit",
    "AtomicMemoryList",
    "AtomicMemorySearchResult",
    "BadServerUrl",
    "ClientClosed",
    "Conflict",
    "Forbidden",
    "InvalidRequest",
    "NotFound",
    "PowerContextClient",
    "PowerContextError",
    "PrepareContextRequest",
    "PreparedContext",
    "Scope",
    "SyncPowerContextClient",
    "Unavailable",
    "__version__",
]

# Where each exported name lives (tests/unit/test_exported_members.py keeps this, the imports above and
# ``__all__`` identical).
_HOMES = {
    "PowerContextClient": "powercontext.client",
    "SyncPowerContextClient": "powercontext.client.sync",
    "PowerContextError": "powercontext.errors",
    "NotFound": "powercontext.errors",
    "Conflict": "powercontext.errors",
    "Forbidden": "powercontext.errors",
    "Unavailable": "powercontext.errors",
    "InvalidRequest": "powercontext.errors",
    "ClientClosed": "powercontext.errors",
    "PrepareContextRequest": "powercontext.contract.prepare",
    "PreparedContext": "powercontext.contract.prepare",
    "Scope": "powercontext.contract.scopes",
    "BadServerUrl": "powercontext.server_url",
    **dict.fromkeys(
        (
            "AtomicMemory",
            "AtomicMemoryBatchItem",
            "AtomicMemoryCreate",
            "AtomicMemoryCreated",
            "AtomicMemoryHit",
            "AtomicMemoryList",
            "AtomicMemorySearchResult",
        ),
        "powercontext.contract.memory",
    ),
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'powercontext' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
