"""The agent frameworks the adapters are tested against, imported for real: missing ones skip here, fail under CI."""

from __future__ import annotations

import importlib
from types import ModuleType

from tests.ci import unavailable


def framework(module: str, package: str) -> ModuleType:
    """``module`` imported, or the test skipped (failed under CI) naming the PyPI ``package`` to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        unavailable(f"{package} is not installed (pip install -e '.[dev]' installs every framework adapter's)")


def artifact_id(created: dict[str, object]) -> str:
    """The artifact id of an Atomic Memory create answer."""
    address = created["artifact_address"]
    assert isinstance(address, dict)
    return str(address["artifact"]["artifact_id"])
