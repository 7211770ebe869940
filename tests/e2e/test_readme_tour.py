"""The README's tour, run verbatim from README.md against a fresh real Server, as a newcomer would.

The Server is started with the settings of the README's first command (its ``POWERCONTEXT_CODE_ROOTS``
points at the clone); each tour line then runs in bash from the clone's root, exactly as written, and its
output is checked. The Python examples run as scripts.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, LiveServer, live_server

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def fenced_blocks(section_heading: str, language: str) -> list[str]:
    """The fenced ``language`` blocks of one ``## `` section of README.md."""
    start = README.index(section_heading)
    end = README.find("\n## ", start + len(section_heading))
    section = README[start : end if end != -1 else None]
    return re.findall(rf"```{language}\n(.*?)```", section, flags=re.DOTALL)


def first_command_settings() -> dict[str, str]:
    """The ``POWERCONTEXT_*`` assignments of the README's first command, with ``$PWD`` the clone."""
    first = fenced_blocks("## Set up", "sh")[0]
    assignments = dict(re.findall(r'(POWERCONTEXT_[A-Z_]+)="?([^"\s]+)"?', first))
    return {name: value.replace("$PWD", str(REPO_ROOT)) for name, value in assignments.items()}


TOUR = fenced_blocks("## A 60-second tour", "sh")[0].strip().splitlines()
PREAMBLE, STEPS = TOUR[0], TOUR[1:]


@pytest.fixture(scope="module")
def tour_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    settings = first_command_settings()
    assert settings == {"POWERCONTEXT_CODE_ROOTS": str(REPO_ROOT)}, "the README's first command changed"
    with live_server(tmp_path_factory.mktemp("tour"), settings) as live:
        yield live


def run_step(step: str, server: LiveServer, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env.update(POWERCONTEXT_URL=server.base_url, HOME=str(home), COLUMNS="200")
    # The README's `pc=.venv/bin/powercontext` names the clone's venv; a test run may use another interpreter.
    preamble = f"pc={shlex.quote(str(Path(sys.executable).parent / 'powercontext'))}"
    assert PREAMBLE == "pc=.venv/bin/powercontext"
    script = f"set -e\n{preamble}\n{step}\n"
    return subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=600, check=False
    )


def check(step: str, stdout: str) -> None:
    """What a newcomer should see after each tour line."""
    if "scope create" in step:
        assert stdout.strip() == "created Scope project:payments"
    elif "memory add" in step:
        assert "revision 1" in stdout and "We chose SQLite" in stdout
    elif "memory import" in step:
        shipped = (REPO_ROOT / "examples" / "memories.jsonl").read_text(encoding="utf-8").strip().splitlines()
        assert stdout.strip() == f"imported {len(shipped)} memories into project:payments; 0 already existed"
    elif "memory search" in step:
        hits = stdout.splitlines()[1:]
        assert hits and all("deploy" in hit for hit in hits), stdout
    elif "memory list" in step:
        assert len(stdout.splitlines()) == 5
    elif "context prepare" in step:
        assert "We chose SQLite as the embedded default" in stdout and "Selected (injection order)" in stdout
    elif "topic create" in step:
        assert "Settlement" in stdout
    elif "profile set" in step:
        assert "Python 3.11" in stdout
    elif "code index" in step:
        assert re.search(r"[1-9][0-9]* indexed", stdout), stdout
    elif "code query" in step:
        count, first_hit = stdout.strip().splitlines()[:2]
        assert count.endswith("hit(s)") and "src/powercontext/code/chunking.py:" in first_hit, stdout
    else:
        raise AssertionError(f"a tour step this test does not check yet: {step}")


def test_the_tour_runs_verbatim(tour_server: LiveServer, tmp_path: Path) -> None:
    assert len(STEPS) >= 9
    for step in STEPS:
        result = run_step(step, tour_server, tmp_path)
        assert result.returncode == 0, f"{step}\n{result.stdout}\n{result.stderr}"
        check(step, result.stdout)
    # safe to re-run: the import says everything already existed
    again = run_step(next(s for s in STEPS if "memory import" in s), tour_server, tmp_path)
    assert "imported 0 memories" in again.stdout and "12 already existed" in again.stdout
    python_examples(tour_server, tmp_path)


def python_examples(server: LiveServer, tmp_path: Path) -> None:
    examples = fenced_blocks("## A 60-second tour", "python")
    assert len(examples) == 2
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    for number, example in enumerate(examples):
        script = tmp_path / f"example_{number}.py"
        script.write_text(example.replace("http://127.0.0.1:8765", server.base_url), encoding="utf-8")
        result = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120, check=False
        )
        assert result.returncode == 0, result.stderr
        assert "<powercontext-context" in result.stdout or "SQLite" in result.stdout or "card" in result.stdout
    answer = json.loads(
        subprocess.run(
            [sys.executable, "-m", "powercontext", "memory", "search", "original card", "-s", "project:payments",
             "--json", "--url", server.base_url],
            capture_output=True, text=True, env=env, timeout=120, check=True,
        ).stdout
    )  # fmt: skip
    assert any(hit["text"] == "Refunds go back to the original card." for hit in answer["hits"])
