"""The agent frameworks the adapters are tested against, imported for real: missing ones skip here, fail under CI."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

from tests.ci import under_ci


def framework(module: str, package: str) -> ModuleType:
    """``module`` imported, or, called where a test module is imported, the whole module skipped (failed under CI:
    untested is unsupported) with the PyPI ``package`` to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        reason = f"{package} is not installed (pip install -e '.[dev]' installs every framework adapter's)"
        if under_ci():
            pytest.fail(f"{reason} (under CI every test runs: untested is unsupported)", pytrace=False)
        pytest.skip(reason, allow_module_level=True)


def artifact_id(created: dict[str, object]) -> str:
    """The artifact id of an Atomic Memory create answer."""
    address = created["artifact_address"]
    assert isinstance(address, dict)
    return str(address["artifact"]["artifact_id"])
