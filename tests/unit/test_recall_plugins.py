"""The OpenCode plugin and the Pi extension are written from one hook runner (``hosts/assets/recall_runner.js``):
each installed file is self-contained, holds the runner once, names its own host, and parses as a module."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from powercontext.hosts.extension import RUNNER_MARKER, asset_text, plugin_text
from tests.ci import unavailable

PLUGINS = {"opencode.js": "opencode", "pi.ts": "pi", "dsh.mjs": "dsh"}


@pytest.mark.parametrize("name", sorted(PLUGINS))
def test_each_plugin_holds_the_shared_runner_once_and_names_its_host(name: str) -> None:
    text = plugin_text(name)
    runner = asset_text("recall_runner.js")
    assert text.count(runner) == 1
    assert RUNNER_MARKER not in text
    assert text.count(f'const HOST = "{PLUGINS[name]}"\n') == 1
    # Nothing but the runner is shared: the host's own part (its head and its entry point) stays its own.
    assert "export" in text.split(runner)[1] and "export" not in runner


def test_the_installed_opencode_plugin_is_a_module_node_parses(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        unavailable("no node on PATH")
    plugin = tmp_path / "opencode.mjs"
    plugin.write_text(plugin_text("opencode.js"), encoding="utf-8")
    checked = subprocess.run([node, "--check", str(plugin)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stderr


def test_an_asset_without_the_marker_is_refused() -> None:
    with pytest.raises(ValueError, match="recall-runner marker"):
        plugin_text("recall_runner.js")


def _runner_section(text: str) -> str:
    start = text.index("# -- BEGIN recall runner")
    return text[start : text.index("# -- END recall runner --", start)]


def test_the_python_plugins_hold_the_same_runner_and_name_their_own_host() -> None:
    """Hermes's plugin (an asset install copies) and Bub's package (pip-installed) run the hook the same way."""
    from tests.conftest import REPO_ROOT

    hermes = asset_text("hermes_plugin.py")
    bub = (REPO_ROOT / "integrations" / "bub" / "powercontext_recall_bub" / "__init__.py").read_text(encoding="utf-8")
    assert _runner_section(hermes) == _runner_section(bub)
    assert 'HOST = "hermes"\n' in hermes and 'HOST = "bub"\n' in bub
    for text in (hermes, bub):
        compile(text, "<plugin>", "exec")
