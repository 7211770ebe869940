"""``powercontext eval extraction`` on the shipped suite (examples/eval/extraction), with a fake model whose answers
are the suite's own operations: it tests the plumbing (capture, redaction, extraction, revision, scoring), so a
perfect score is expected; and without a model, only the explicit statements are found."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.chat_fixture import start_chat_server

SUITE = Path(__file__).resolve().parents[2] / "examples" / "eval" / "extraction"


def _run(tmp_path: Path, **settings: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("POWERCONTEXT_")}
    env.update(POWERCONTEXT_EMBEDDINGS="none", **settings)
    out = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "powercontext", "eval", "extraction", str(SUITE), "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "extraction: recall" in done.stdout
    report: dict[str, object] = json.loads(out.read_text())
    return report


def test_the_suite_scores_perfectly_when_the_model_answers_what_a_careful_engineer_would(tmp_path: Path) -> None:
    lines = (SUITE / "conversations.jsonl").read_text().splitlines()
    script = [
        {"mode": "operations", "operations": turn.get("operations", [])}
        for line in lines
        for turn in json.loads(line)["turns"]
    ]
    with start_chat_server() as chat:
        chat.control(script=script)
        report = _run(
            tmp_path,
            POWERCONTEXT_GENERATION="openai-compatible",
            POWERCONTEXT_GENERATION_BASE_URL=chat.base_url,
            POWERCONTEXT_GENERATION_MODEL="careful-engineer",
        )
        assert chat.requests() == len(script)
    assert report["extractor"] == "model"
    assert (report["recall"], report["precision"]) == (1.0, 1.0)
    assert (report["outdated_active"], report["secrets_stored"]) == (0, 0)


def test_without_a_model_only_explicit_statements_are_extracted_and_no_secret_is_stored(tmp_path: Path) -> None:
    report = _run(tmp_path)
    assert report["extractor"] == "explicit"
    assert report["secrets_stored"] == 0
    assert float(str(report["recall"])) < 1.0  # what was not said explicitly waits for a model
