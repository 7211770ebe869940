"""PowerContext: a context runtime for AI agents.

Heavy modules load lazily so that ``powercontext --help`` stays fast; ``from powercontext import
PowerContextClient, PrepareContextRequest`` still works.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "PowerContextClient": "powercontext.client",
    "PowerContextError": "powercontext.client",
    "SyncPowerContextClient": "powercontext.client.sync",
    "PrepareContextRequest": "powercontext.contract.prepare",
    "PreparedContext": "powercontext.contract.prepare",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'powercontext' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
