"""Which directories may be indexed: ``confine.index_root`` and ``POWERCONTEXT_CODE_ROOTS`` parsing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from powercontext.code.confine import index_root
from powercontext.code.errors import CodeRootForbidden, InvalidCodePath
from powercontext.settings import Settings, SettingsError


def settings_with(monkeypatch: pytest.MonkeyPatch, roots: str) -> Settings:
    # The environment is the input here, not the code under test.
    monkeypatch.setenv("POWERCONTEXT_CODE_ROOTS", roots)
    return Settings.from_env(db="x.db")


def test_roots_are_a_path_list(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    assert settings_with(monkeypatch, f"{a}{os.pathsep}{os.pathsep} {b} ").code_roots == (a, b)
    assert settings_with(monkeypatch, "").code_roots == ()
    monkeypatch.delenv("POWERCONTEXT_CODE_ROOTS")
    assert Settings.from_env(db="x.db").code_roots == ()


@pytest.mark.parametrize("value", ["relative", "/proc", "/sys/kernel", "/dev", "/no/such/directory"])
def test_bad_roots_name_the_variable(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    with pytest.raises(SettingsError, match="POWERCONTEXT_CODE_ROOTS"):
        settings_with(monkeypatch, value)


def test_a_root_that_links_into_proc_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    os.symlink("/proc/self", tmp_path / "proc-link")
    with pytest.raises(SettingsError, match="POWERCONTEXT_CODE_ROOTS"):
        settings_with(monkeypatch, str(tmp_path / "proc-link"))


def test_index_root_resolves_then_checks(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "repo").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", root / "out")
    os.symlink(root / "repo", tmp_path / "into-root")
    assert index_root(root / "repo", [root]) == (root / "repo").resolve()
    assert index_root(root, [root]) == root.resolve()
    assert index_root(tmp_path / "into-root", [root]) == (root / "repo").resolve()  # the target decides
    for refused in (root / "out", tmp_path / "outside", tmp_path, Path("/etc"), Path("/proc/self")):
        with pytest.raises(CodeRootForbidden):
            index_root(refused, [root])
    with pytest.raises(CodeRootForbidden, match="POWERCONTEXT_CODE_ROOTS"):
        index_root(root / "repo", [])
    with pytest.raises(InvalidCodePath):
        index_root(root / "missing", [root])
    # Unconfined (the in-process CLI): anything but the kernel file systems.
    assert index_root(tmp_path / "outside", None) == (tmp_path / "outside").resolve()
    for kernel in ("/proc", "/proc/1/cwd", "/sys", "/dev/shm"):
        with pytest.raises(CodeRootForbidden):
            index_root(Path(kernel), None)
