"""A user's type checker sees the SDK's real types: ``mypy --strict --disallow-any-expr`` passes on a script
that uses both clients, the error families and the wire models, with no expression typed ``Any``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[1] / "data" / "sdk_user" / "uses_both_clients.py"


def _mypy(script: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # Run outside the repository with no config file, as a user's project would: the package is found as
    # installed (py.typed), not through this repository's mypy settings.
    command = [sys.executable, "-m", "mypy", "--strict", "--disallow-any-expr", "--config-file=", "--no-incremental"]
    return subprocess.run([*command, str(script)], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_a_user_script_type_checks_strictly_with_no_any(tmp_path: Path) -> None:
    script = tmp_path / "user_script.py"
    script.write_text(
        SCRIPT.read_text(encoding="utf-8")
        + "\nreveal_type(SyncPowerContextClient.search_memory)\nreveal_type(PowerContextClient.prepare_context)\n",
        encoding="utf-8",
    )
    result = _mypy(script, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "powercontext.contract.memory.AtomicMemorySearchResult" in result.stdout
    assert "Coroutine[Any, Any, powercontext.contract.prepare.PreparedContext]" in result.stdout


def test_a_wrong_use_is_reported(tmp_path: Path) -> None:
    script = tmp_path / "wrong.py"
    script.write_text(
        "from powercontext import SyncPowerContextClient\n"
        "with SyncPowerContextClient() as client:\n"
        "    revision: str = client.get_memory('s', 'a').artifact_address.artifact.revision\n",
        encoding="utf-8",
    )
    result = _mypy(script, tmp_path)
    assert result.returncode == 1
    assert 'Incompatible types in assignment (expression has type "int", variable has type "str")' in result.stdout
