"""Schemathesis drives every operation of the served OpenAPI document against a real server for a minute.

Whatever it sends, the Server answers with a documented status, the error envelope, a conforming body
and the right headers; never a 500. Every check runs (``--checks all``), ``positive_data_acceptance`` and
``negative_data_rejection`` included: a schema-valid request is accepted and a schema-invalid one refused,
except where a documented rule the schema cannot state refuses it (``schemathesis_hooks.py`` lists them;
docs/operations.md explains them).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, LiveServer, live_server

FUZZ_SECONDS = 60


def hooks_env() -> dict[str, str]:
    env = dict(os.environ)
    env["SCHEMATHESIS_HOOKS"] = "tests.e2e.schemathesis_hooks"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    # Its own database: the fuzzer writes into whatever Scopes it invents.
    with live_server(tmp_path_factory.mktemp("fuzz")) as live:
        yield live


def test_no_input_breaks_the_contract(fuzz_server: LiveServer, tmp_path: Path) -> None:
    schemathesis = Path(sys.executable).with_name("schemathesis")
    result = subprocess.run(
        [
            str(schemathesis),
            "run",
            f"{fuzz_server.base_url}/openapi.json",
            "--checks",
            "all",
            # A time budget rather than a count: the run stays near a minute on a fast or a loaded machine.
            "--max-time",
            str(FUZZ_SECONDS),
            "--seed",
            "20261202",
            # One worker: with two, schemathesis' generator sometimes crashes in a thread race of its own.
            "--workers",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=FUZZ_SECONDS + 240,
        cwd=tmp_path,
        env=hooks_env(),
        check=False,
    )
    assert result.returncode == 0, result.stdout[-6000:]
    assert "Traceback" not in fuzz_server.log_path.read_text("utf-8", errors="replace")
