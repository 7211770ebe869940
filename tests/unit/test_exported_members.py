"""The package's public names: ``__all__``, the explicit (type-checker) imports and the run-time homes agree,
each name is the object its home module defines, and importing the package stays cheap."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import powercontext
from powercontext.client import PowerContextClient
from powercontext.client.errors import PowerContextError
from powercontext.client.sync import SyncPowerContextClient, async_methods

INIT = Path(powercontext.__file__)


def _type_checking_imports() -> set[str]:
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom)
                names.update(alias.asname or alias.name for alias in statement.names)
    return names


def test_all_matches_the_explicit_imports_and_the_run_time_homes() -> None:
    exported = set(powercontext.__all__) - {"__version__"}
    assert exported == _type_checking_imports()
    assert exported == set(powercontext._HOMES)
    assert sorted(powercontext.__all__) == powercontext.__all__


def test_every_exported_name_is_the_object_of_its_home_module() -> None:
    import importlib

    for name in powercontext.__all__:
        value = getattr(powercontext, name)
        if name == "__version__":
            assert isinstance(value, str)
            continue
        home = importlib.import_module(powercontext._HOMES[name])
        assert value is getattr(home, name), name
        assert getattr(value, "__module__", "").startswith("powercontext."), name
        assert name in dir(powercontext)


def test_every_error_family_is_a_power_context_error() -> None:
    families = {"NotFound", "Conflict", "Forbidden", "Unavailable", "InvalidRequest"}
    for name in families:
        assert issubclass(getattr(powercontext, name), PowerContextError), name
    assert families | {"PowerContextError"} <= set(powercontext.__all__)


def test_every_async_method_has_a_typed_sync_twin() -> None:
    untyped = [
        name
        for name in async_methods()
        if name not in SyncPowerContextClient.__dict__
        or getattr(SyncPowerContextClient.__dict__[name], "__sync_untyped__", False)
    ]
    assert untyped == [], "write a typed method in client/sync.py for each of these"
    for name in async_methods():
        sync_sig = inspect.signature(getattr(SyncPowerContextClient, name))
        assert sync_sig == inspect.signature(getattr(PowerContextClient, name)), name


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        powercontext.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("no AttributeError")


def test_importing_the_package_loads_neither_the_client_nor_the_server() -> None:
    heavy = "('httpx', 'pydantic', 'fastapi', 'uvicorn')"
    code = f"import sys, powercontext; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_package_is_marked_typed() -> None:
    assert (INIT.parent / "py.typed").is_file()


def test_the_client_module_still_exports_the_names_it_exported_before() -> None:
    """``from powercontext.client import NotFound`` (and the rest of its old ``__all__``) keeps working: the
    package's list moved to ``powercontext.__all__``, the old import paths did not go away."""
    import powercontext.client as client

    former = ("Conflict", "Forbidden", "InvalidRequest", "NotFound", "PowerContextClient", "PowerContextError")
    former += ("PrepareContextRequest", "PreparedContext", "Unavailable")
    assert {name: getattr(client, name) for name in former} == {name: getattr(powercontext, name) for name in former}
