"""A user's type checker sees the SDK's real types: ``mypy --strict --disallow-any-expr`` passes on a script
that uses both clients, the error families and the wire models, with no expression typed ``Any``."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "data" / "sdk_user" / "uses_both_clients.py"


@dataclass(frozen=True)
class Checked:
    """One mypy run over both scripts (a run costs ~5 s): its output lines, per script."""

    lines: dict[str, list[str]]
    exit_code: int


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Checked:
    folder = tmp_path_factory.mktemp("sdk-user")
    (folder / "user_script.py").write_text(
        SCRIPT.read_text(encoding="utf-8")
        + "\nreveal_type(SyncPowerContextClient.search_memory)\nreveal_type(PowerContextClient.prepare_context)\n",
        encoding="utf-8",
    )
    (folder / "wrong.py").write_text(
        "from powercontext import SyncPowerContextClient\n"
        "with SyncPowerContextClient() as client:\n"
        "    revision: str = client.get_memory('s', 'a').artifact_address.artifact.revision\n",
        encoding="utf-8",
    )
    # Run outside the repository with no config file, as a user's project would: the package is found as
    # installed (py.typed), not through this repository's mypy settings.
    command = [sys.executable, "-m", "mypy", "--strict", "--disallow-any-expr", "--config-file=", "--no-incremental"]
    done = subprocess.run(
        [*command, "user_script.py", "wrong.py"], capture_output=True, text=True, cwd=folder, timeout=300
    )
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 2: mypy itself failed
    lines: dict[str, list[str]] = {"user_script.py": [], "wrong.py": []}
    for line in done.stdout.splitlines():
        name = line.split(":", 1)[0]
        if name in lines:
            lines[name].append(line)
    return Checked(lines, done.returncode)


def test_a_user_script_type_checks_strictly_with_no_any(checked: Checked) -> None:
    lines = checked.lines["user_script.py"]
    assert not [line for line in lines if ": error:" in line], "\n".join(lines)
    notes = "\n".join(lines)
    assert "powercontext.contract.memory.AtomicMemorySearchResult" in notes
    assert "Coroutine[Any, Any, powercontext.contract.prepare.PreparedContext]" in notes


def test_a_wrong_use_is_reported(checked: Checked) -> None:
    assert checked.exit_code == 1
    expected = 'Incompatible types in assignment (expression has type "int", variable has type "str")'
    assert any(expected in line for line in checked.lines["wrong.py"]), checked.lines
